-- Issue 47: the confidence each golden question's answer was given (high | medium | low; NULL
-- for a refusal), so that the share of confident answers that are right (selective precision)
-- and the share of answerable questions answered confidently (coverage) are kept per run.
ALTER TABLE eval_questions ADD COLUMN IF NOT EXISTS confidence text;
-- and the probability it rests on (answer.confidence), which orders the risk-coverage curve
ALTER TABLE eval_questions ADD COLUMN IF NOT EXISTS confidence_probability double precision;
