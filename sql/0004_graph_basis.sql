-- Where a graph edge comes from: 'structure' (HAS_PART, from the parsed layout), 'text' (the
-- document's own words, quoted in evidence_phrase) or 'curated' (data/derivations.yaml, with
-- the entry's note). Idempotent.

ALTER TABLE graph_edges
    ADD COLUMN IF NOT EXISTS basis text NOT NULL DEFAULT 'text'
        CHECK (basis IN ('structure', 'text', 'curated')),
    ADD COLUMN IF NOT EXISTS note text;

-- Per document of a jurisdiction's graph: how many internal references it makes, how many do not
-- resolve (with the missing targets), and how many of its rules derive from an Act section.
-- Replaced with the jurisdiction's edges in the same transaction.
CREATE TABLE IF NOT EXISTS graph_documents (
    document_key         text PRIMARY KEY,
    jurisdiction         text NOT NULL,
    internal_references  integer NOT NULL,
    unresolved           integer NOT NULL,
    unresolved_rate      double precision NOT NULL,
    rules                integer NOT NULL,
    rules_derived        integer NOT NULL,
    missing_targets      jsonb NOT NULL DEFAULT '[]',
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS graph_documents_jurisdiction ON graph_documents (jurisdiction);
