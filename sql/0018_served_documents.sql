-- Documents as the unit of incremental work (issue 46): each document a jurisdiction's run
-- served, with the fingerprint of what served it (the PDF's sha256, its registry entry, the
-- code, the settings that change the output and, outside the Act's own jurisdiction, the Act's
-- fingerprint) and the documents it amends or repeals. A run processes the documents whose
-- fingerprint differs (new, changed, failed or set aside before) with their amendment family,
-- and leaves the others as they are. Written by the served_documents asset, after every step of
-- the run; a document that failed or was set aside has no row, so the next run takes it again.
-- Idempotent.

CREATE TABLE IF NOT EXISTS served_documents (
    jurisdiction  text NOT NULL,
    document_key  text NOT NULL,
    fingerprint   text NOT NULL,
    targets       text[] NOT NULL DEFAULT '{}',
    run_id        text NOT NULL,
    served_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (jurisdiction, document_key)
);
