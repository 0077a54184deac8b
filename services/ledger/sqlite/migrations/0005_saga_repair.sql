-- The audit of `prsaga ledger verify --repair` (design §5 "Verify and
-- repair"): one row per saga a repair rewrote, with the row and the
-- history before and after (JSON) and who ran it. The rewrite and its
-- audit row commit together.
CREATE TABLE IF NOT EXISTS saga_repair (
    pr_id        TEXT    NOT NULL,
    repaired_at  INTEGER NOT NULL,
    actor        TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    before       TEXT    NOT NULL,
    after        TEXT    NOT NULL,
    PRIMARY KEY (pr_id, repaired_at)
) WITHOUT ROWID;
