-- The ledger's projection (design §4, §5). Times are Unix microseconds (UTC).
-- WITHOUT ROWID: every secondary index entry then ends with pr_id, so the
-- listing order (updated_at DESC, pr_id DESC) comes straight from an index.
CREATE TABLE IF NOT EXISTS pr_saga (
    pr_id          TEXT    NOT NULL PRIMARY KEY,
    repo           TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    failed_step    TEXT    NOT NULL DEFAULT '',
    last_error     TEXT    NOT NULL DEFAULT '',
    timed_out      INTEGER NOT NULL DEFAULT 0,
    attempts       INTEGER NOT NULL,
    merge_sha      TEXT    NOT NULL DEFAULT '',
    merged         INTEGER NOT NULL DEFAULT 0,
    version        INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) WITHOUT ROWID;
-- The watchdog's index (in-flight rows older than their state's timeout)
-- and the list by state.
CREATE INDEX IF NOT EXISTS idx_saga_state ON pr_saga (state, updated_at);
CREATE INDEX IF NOT EXISTS idx_saga_repo ON pr_saga (repo, updated_at);
CREATE INDEX IF NOT EXISTS idx_saga_updated ON pr_saga (updated_at);

CREATE TABLE IF NOT EXISTS saga_transition (
    pr_id          TEXT    NOT NULL,
    seq            INTEGER NOT NULL,
    correlation_id TEXT    NOT NULL,
    from_state     TEXT    NOT NULL,
    to_state       TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    event_id       TEXT    NOT NULL DEFAULT '',
    inferred       INTEGER NOT NULL DEFAULT 0,
    actor          TEXT    NOT NULL DEFAULT '',
    at             INTEGER NOT NULL,
    PRIMARY KEY (pr_id, seq)
) WITHOUT ROWID;
-- `prsaga trace <correlation-id>`.
CREATE INDEX IF NOT EXISTS idx_transition_correlation ON saga_transition (correlation_id);

CREATE TABLE IF NOT EXISTS saga_event (
    event_id       TEXT    NOT NULL PRIMARY KEY,
    pr_id          TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('applied', 'ignored')),
    reason         TEXT    NOT NULL DEFAULT '',
    received_at    INTEGER NOT NULL,
    event          TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_event_pr ON saga_event (pr_id, received_at);
-- A retry replays the latest trigger event of a run.
CREATE INDEX IF NOT EXISTS idx_event_correlation ON saga_event (correlation_id, type, received_at);
