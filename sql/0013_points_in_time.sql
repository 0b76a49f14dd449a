-- Amendments and repeals as dated law (ingest.amendments): a chunk row an amending instrument
-- made carries its evidence (the instrument, the instruction's words, page and date); a point in
-- time that starts later than today is 'scheduled' until its date; the graph gains AMENDED_BY
-- (unit -> amending instrument) and REPEALED_BY (instrument -> repealing instrument). Idempotent.
ALTER TABLE legal_chunks ADD COLUMN IF NOT EXISTS amendment jsonb;
ALTER TABLE legal_chunks DROP CONSTRAINT IF EXISTS legal_chunks_status_check;
ALTER TABLE legal_chunks ADD CONSTRAINT legal_chunks_status_check
    CHECK (status IN ('current', 'superseded', 'scheduled'));
ALTER TABLE graph_edges DROP CONSTRAINT IF EXISTS graph_edges_edge_type_check;
ALTER TABLE graph_edges ADD CONSTRAINT graph_edges_edge_type_check
    CHECK (edge_type IN ('HAS_PART', 'REFERENCES', 'DERIVED_FROM', 'EXTERNAL_REFERENCE',
                         'AMENDED_BY', 'REPEALED_BY'));
