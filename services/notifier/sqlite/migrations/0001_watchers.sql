CREATE TABLE IF NOT EXISTS watcher (
    id         TEXT PRIMARY KEY,
    repo       TEXT NOT NULL,
    url        TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_watcher_repo ON watcher (repo);

CREATE TABLE IF NOT EXISTS delivery (
    correlation_id TEXT NOT NULL,
    watcher_id     TEXT NOT NULL,
    delivered      INTEGER NOT NULL,
    attempts       INTEGER NOT NULL,
    last_error     TEXT NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (correlation_id, watcher_id)
);
