-- A document set aside by a per-document step that runs after the catalog is written (embedding,
-- graph edges, provisions): an exception while that step handled the document. One row per
-- (jurisdiction, step, document), replaced each time the step runs for the jurisdiction; the
-- catalog's own ingest_status covers fetch, parse, structure, amendments and blocking checks.
CREATE TABLE IF NOT EXISTS document_set_asides (
    jurisdiction text NOT NULL,
    stage text NOT NULL,
    document_key text NOT NULL,
    error_type text NOT NULL,
    message text NOT NULL,
    page integer,
    location text,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (jurisdiction, stage, document_key)
);
