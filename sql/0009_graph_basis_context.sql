-- A fourth origin of a graph edge: 'context', a section the RERA Act lacks, cited in a unit that
-- names another enactment, recorded as that enactment's (EXTERNAL_REFERENCE, with a note).
ALTER TABLE graph_edges DROP CONSTRAINT IF EXISTS graph_edges_basis_check;
ALTER TABLE graph_edges ADD CONSTRAINT graph_edges_basis_check
    CHECK (basis IN ('structure', 'text', 'curated', 'context'));
