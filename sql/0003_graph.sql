-- The legal graph in Postgres: typed edges between documents and chunk units, each with its
-- evidence (the chunk, character offsets and quoted phrase). Replaced per jurisdiction in one
-- transaction by civicsetu_pipelines.graph.replace_edges. Idempotent.

CREATE TABLE IF NOT EXISTS graph_edges (
    edge_id           bigserial PRIMARY KEY,
    jurisdiction      text NOT NULL,
    edge_type         text NOT NULL CHECK (edge_type IN
                          ('HAS_PART', 'REFERENCES', 'DERIVED_FROM', 'EXTERNAL_REFERENCE')),
    source_document   text NOT NULL,
    source_id         text NOT NULL,          -- a chunk id, or the document key for documents
    source_label      text NOT NULL,
    target_document   text,
    target_id         text,                   -- NULL for external references
    target_label      text NOT NULL,
    evidence_chunk    text,
    evidence_start    integer,
    evidence_end      integer,
    evidence_phrase   text,
    confidence        double precision NOT NULL DEFAULT 1.0
);

CREATE INDEX IF NOT EXISTS graph_edges_jurisdiction ON graph_edges (jurisdiction, edge_type);
CREATE INDEX IF NOT EXISTS graph_edges_source ON graph_edges (source_id);
CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (target_id);
