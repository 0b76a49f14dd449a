-- What each jurisdiction's rules fixed for each matter the Act leaves to them
-- (provisions.table.read_provisions), one row per jurisdiction and matter, replaced per
-- jurisdiction in one transaction; and the divergences flagged over all of them. Idempotent.
CREATE TABLE IF NOT EXISTS state_provisions (
    jurisdiction  text NOT NULL,
    matter        text NOT NULL,
    status        text NOT NULL CHECK (status IN ('found', 'not_found')),
    value         text,
    number        double precision,
    unit          text,
    quote         text,
    document_key  text,
    label         text,
    chunk_id      text,
    page          integer,
    basis         text,
    draft         boolean NOT NULL DEFAULT false,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (jurisdiction, matter)
);

CREATE TABLE IF NOT EXISTS state_divergences (
    matter        text NOT NULL,
    jurisdiction  text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('differs', 'contractual', 'unfilled', 'draft')),
    message       text NOT NULL,
    evidence      jsonb NOT NULL DEFAULT '[]',
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS state_divergences_matter ON state_divergences (matter, jurisdiction);
