-- The first answer to a retry under each Idempotency-Key (design §4): a
-- repeated call returns it. Answers older than a day are pruned.
CREATE TABLE IF NOT EXISTS retry_answer (
    idempotency_key TEXT    NOT NULL PRIMARY KEY,
    pr_id           TEXT    NOT NULL,
    answer          TEXT    NOT NULL,
    created_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_retry_answer_created ON retry_answer (created_at);
