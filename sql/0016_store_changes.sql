-- What changed, recorded (issue 37): one row per change a run made, written in the transaction
-- that made it (civicsetu_pipelines.store.changes), so a failed load records nothing.
--
-- kind: a unit 'added', 'changed' (its text, or its label) or 'ended' (retired or superseded
-- with no successor) by a load of the jurisdiction's partition or a retirement; a provision
-- value that moved ('provision', document/unit the rule read after the run); a golden question
-- whose governing citations changed between two evaluation runs ('citation'). old_sha256 and
-- new_sha256 are sha256 of the unit's text before and after; instrument the amending or
-- repealing instrument that made the change (NULL when none explains it). Idempotent.

CREATE TABLE IF NOT EXISTS store_changes (
    change_id     bigserial PRIMARY KEY,
    run_id        text NOT NULL,
    jurisdiction  text NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    kind          text NOT NULL
        CHECK (kind IN ('added', 'changed', 'ended', 'provision', 'citation')),
    document_key  text,
    unit_label    text,
    chunk_id      text,
    old_sha256    text,
    new_sha256    text,
    instrument    text,
    detail        jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX IF NOT EXISTS store_changes_recent ON store_changes (recorded_at DESC, change_id);
CREATE INDEX IF NOT EXISTS store_changes_jurisdiction
    ON store_changes (jurisdiction, recorded_at DESC);

-- The units each question's answer cited ([{"unit": "J:Section label", "chunk_id": ...}]):
-- a 'citation' change compares a question's governing citations with the previous run's.
ALTER TABLE eval_questions ADD COLUMN IF NOT EXISTS cited jsonb;
