-- A document set aside (its own chunks fail a blocking check; its previous rows stay served and
-- the jurisdiction's other documents load) is recorded as such in the catalog.
ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_ingest_status_check;
ALTER TABLE documents ADD CONSTRAINT documents_ingest_status_check
    CHECK (ingest_status IN ('ok', 'failed', 'set_aside'));
