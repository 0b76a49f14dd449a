-- Core schema: the documents the ingestion writes and their structural units.
-- Idempotent on purpose (IF NOT EXISTS everywhere); applied once by apply_migrations().

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS documents (
    key              text PRIMARY KEY,
    jurisdiction     text NOT NULL,
    title            text,
    doc_type         text,
    status           text CHECK (status IN ('in_force', 'draft')),
    language         text,
    effective_date   date,
    source_url       text,
    sha256           text,
    bytes            bigint,
    pages            integer,
    pages_ingested   integer,
    ocr_pages        integer,
    needs_ocr_pages  integer,
    sections         integer,
    chunks           integer,
    coverage         double precision,
    ingest_status    text NOT NULL CHECK (ingest_status IN ('ok', 'failed')),
    error            text,
    updated_at       timestamptz DEFAULT now()
);

CREATE INDEX IF NOT EXISTS documents_jurisdiction_idx ON documents (jurisdiction);

CREATE TABLE IF NOT EXISTS document_units (
    document_key  text NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    ordinal       integer NOT NULL,
    unit          text,
    number        text,
    label         text,
    title         text,
    page_start    integer,
    PRIMARY KEY (document_key, ordinal)
);
