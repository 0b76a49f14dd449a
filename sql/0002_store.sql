-- The serving store: document versions, legal chunks with embeddings and full-text vectors,
-- and the embedding cache. Idempotent.
--
-- The embedding column is created 384-d (the default model). When the configured model has
-- another dimension, civicsetu_pipelines.store.ensure_model() changes the column type (and
-- clears the vectors so they are re-embedded): one model's vectors are never mixed with
-- another's. store_settings records the model id and dimension in force.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS store_settings (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

CREATE TABLE IF NOT EXISTS document_versions (
    version_id    bigserial PRIMARY KEY,
    document_key  text NOT NULL,
    jurisdiction  text NOT NULL,
    sha256        text NOT NULL,
    valid_from    date NOT NULL,
    valid_to      date,
    status        text NOT NULL CHECK (status IN ('current', 'superseded', 'retired')),
    ingested_at   timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX IF NOT EXISTS document_versions_one_current
    ON document_versions (document_key) WHERE status = 'current';

CREATE TABLE IF NOT EXISTS legal_chunks (
    row_id             bigserial PRIMARY KEY,
    chunk_id           uuid NOT NULL,
    version_id         bigint NOT NULL REFERENCES document_versions (version_id),
    document_key       text NOT NULL,
    jurisdiction       text NOT NULL,
    doc_type           text NOT NULL,
    unit               text NOT NULL,
    number             text,
    legal_path         text NOT NULL,
    label              text NOT NULL,
    section_label      text NOT NULL,
    title              text,
    chapter            text,
    text               text NOT NULL,
    page_start         integer NOT NULL,
    page_end           integer NOT NULL,
    char_start         integer NOT NULL,
    char_end           integer NOT NULL,
    parent_id          uuid,
    ordinal            integer NOT NULL,
    level              integer NOT NULL,
    flags              jsonb NOT NULL DEFAULT '[]',
    row_sha256         text NOT NULL,
    content_sha256     text NOT NULL,
    model_id           text,
    embedding          vector(384),
    embedding_windows  integer,
    status             text NOT NULL CHECK (status IN ('current', 'superseded')),
    valid_from         date NOT NULL,
    valid_to           date,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    tsv                tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(label, '')), 'A')
        || setweight(to_tsvector('english', coalesce(title, '')), 'B')
        || to_tsvector('english', text)
    ) STORED,
    UNIQUE (chunk_id, version_id)
);

CREATE UNIQUE INDEX IF NOT EXISTS legal_chunks_one_current
    ON legal_chunks (chunk_id) WHERE status = 'current';
CREATE INDEX IF NOT EXISTS legal_chunks_jurisdiction_status
    ON legal_chunks (jurisdiction, status);
CREATE INDEX IF NOT EXISTS legal_chunks_validity
    ON legal_chunks (document_key, valid_from, valid_to);
CREATE INDEX IF NOT EXISTS legal_chunks_tsv
    ON legal_chunks USING gin (tsv);
CREATE INDEX IF NOT EXISTS legal_chunks_embedding_hnsw
    ON legal_chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);

-- Keyed by (model id, sha256 of the embedded text): a re-materialization embeds only new or
-- changed texts. The column has no fixed dimension: it holds every model's vectors.
CREATE TABLE IF NOT EXISTS embedding_cache (
    model_id     text NOT NULL,
    text_sha256  text NOT NULL,
    windows      integer NOT NULL,
    embedding    vector NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, text_sha256)
);
