-- Every unit at a stable address (issue 39): the Akoma Ntoso eId of each chunk ("sec_18",
-- "sec_18__subsec_1", "rule_16__subrule_1__para_a", "att_form-a"), derived at load from its
-- kind of unit and legal path (ingest.akn.assign_eids), unique within a document at each point
-- in time and the same across re-ingestion and across a unit's points in time. Rows loaded
-- before this migration get theirs at the next load of their jurisdiction (or from
-- store.fill_eids). Idempotent.
ALTER TABLE legal_chunks ADD COLUMN IF NOT EXISTS eid text;
CREATE INDEX IF NOT EXISTS legal_chunks_document_eid ON legal_chunks (document_key, eid);
