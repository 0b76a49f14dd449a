-- Where each question's governing unit stood before and after the diversity cap (issue 36):
-- its place among the candidates by score, its place in the final list, its score, how many
-- units placed above it scored less, whether the cap moved it out of the top 5 (written by
-- civicsetu_pipelines.evaluate.record; NULL for a question without one, and in earlier runs).
-- Idempotent.

ALTER TABLE eval_questions
    ADD COLUMN IF NOT EXISTS governing_placement jsonb;
