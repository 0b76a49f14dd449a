-- Per document of a jurisdiction's graph: its substantive rules (not definitions or short title)
-- and how many of them derive from an Act section (the share `civicsetu graph stats` shows and
-- the derivation_coverage check holds to 90%). Idempotent.
ALTER TABLE graph_documents
    ADD COLUMN IF NOT EXISTS substantive_rules integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS substantive_derived integer NOT NULL DEFAULT 0;
