-- The body text of every ingested page, per document version (sha256), as parsed: what a
-- citation's page number is checked against. Kept for superseded versions too, so answers read
-- "as of" a past date still cite the right page. Written by the document_catalog asset. Idempotent.

CREATE TABLE IF NOT EXISTS document_pages (
    document_key  text NOT NULL,
    sha256        text NOT NULL,
    page          integer NOT NULL,
    text          text NOT NULL,
    PRIMARY KEY (document_key, sha256, page)
);
