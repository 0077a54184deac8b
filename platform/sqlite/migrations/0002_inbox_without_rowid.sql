-- The inbox is only ever looked up by its key: without a rowid the key is
-- the table, and an insert writes two B-trees (the table, the expiry
-- index) instead of three — a page less in every handler transaction.
CREATE TABLE inbox_keyed (
    consumer     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    processed_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, event_id)
) WITHOUT ROWID;
INSERT INTO inbox_keyed (consumer, event_id, processed_at) SELECT consumer, event_id, processed_at FROM inbox;
DROP TABLE inbox;
ALTER TABLE inbox_keyed RENAME TO inbox;
CREATE INDEX idx_inbox_processed ON inbox (processed_at);
