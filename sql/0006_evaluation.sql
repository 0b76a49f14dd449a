-- Golden-set evaluation history: one row per run and one per question, so trends accumulate
-- (written by civicsetu_pipelines.evaluation.record). Idempotent.

CREATE TABLE IF NOT EXISTS eval_runs (
    run_id          text PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    scope           text NOT NULL,          -- ALL, or a jurisdiction
    source          text NOT NULL,          -- asset | cli
    golden_file     text NOT NULL,
    golden_sha256   text NOT NULL,
    k               integer NOT NULL,
    questions       integer NOT NULL,
    model_id        text,
    dagster_run_id  text,
    metrics         jsonb NOT NULL          -- headline means
);

CREATE INDEX IF NOT EXISTS eval_runs_scope ON eval_runs (scope, started_at);

CREATE TABLE IF NOT EXISTS eval_questions (
    run_id              text NOT NULL REFERENCES eval_runs (run_id) ON DELETE CASCADE,
    question_id         text NOT NULL,
    jurisdiction        text,
    query_type          text NOT NULL,
    query               text NOT NULL,
    status              text NOT NULL,
    refusal_reason      text,
    expect_refusal      boolean NOT NULL,
    refusal_correct     boolean NOT NULL,
    hit_at_1            double precision,
    hit_at_3            double precision,
    hit_at_5            double precision,
    hit_at_10           double precision,
    recall_at_5         double precision,
    recall_at_10        double precision,
    reciprocal_rank     double precision,
    ndcg_at_10          double precision,
    citation_validity   double precision,
    context_precision   double precision,
    context_recall      double precision,
    answer_similarity   double precision,
    faithfulness        double precision,
    response_relevancy  double precision,
    latency_ms          double precision NOT NULL,
    retrieved           jsonb NOT NULL,
    expected            jsonb NOT NULL,
    PRIMARY KEY (run_id, question_id)
);
