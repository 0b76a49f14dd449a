-- The golden set's dev/test split, phrasing (legal vocabulary or a buyer's own words) and the
-- provisions that govern each question, with the rank of the first governing unit retrieved
-- (written by civicsetu_pipelines.evaluate.record). Idempotent.

ALTER TABLE eval_questions
    ADD COLUMN IF NOT EXISTS split               text,           -- dev | test | NULL (unsplit file)
    ADD COLUMN IF NOT EXISTS phrasing            text NOT NULL DEFAULT 'legal',  -- legal | plain
    ADD COLUMN IF NOT EXISTS governing           jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN IF NOT EXISTS governing_hit_at_1  double precision,
    ADD COLUMN IF NOT EXISTS governing_hit_at_3  double precision,
    ADD COLUMN IF NOT EXISTS governing_hit_at_5  double precision,
    ADD COLUMN IF NOT EXISTS governing_rr        double precision;

CREATE INDEX IF NOT EXISTS eval_questions_split ON eval_questions (run_id, split);
