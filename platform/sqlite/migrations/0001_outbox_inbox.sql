CREATE TABLE IF NOT EXISTS outbox (
    id         TEXT PRIMARY KEY,
    subject    TEXT NOT NULL,
    headers    TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER
);
CREATE INDEX IF NOT EXISTS idx_outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;

CREATE TABLE IF NOT EXISTS inbox (
    consumer     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    processed_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX IF NOT EXISTS idx_inbox_processed ON inbox (processed_at);
