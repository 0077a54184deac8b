-- Commit statuses: the latest state per (repo, sha, context) wins.
CREATE TABLE IF NOT EXISTS commit_status (
    repo        TEXT NOT NULL,
    sha         TEXT NOT NULL,
    context     TEXT NOT NULL,
    state       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (repo, sha, context)
);

-- Branch protection: the contexts required on a target branch (JSON list).
-- No row: the service's default required contexts apply.
CREATE TABLE IF NOT EXISTS protection (
    repo       TEXT NOT NULL,
    branch     TEXT NOT NULL,
    contexts   TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (repo, branch)
);

-- One run per PR (design §4): correlation_id is the holder ('' when free),
-- attempt the holder's attempt that took it, merged is 1 for good.
CREATE TABLE IF NOT EXISTS pr_lock (
    pr_id          TEXT PRIMARY KEY,
    correlation_id TEXT NOT NULL DEFAULT '',
    attempt        INTEGER NOT NULL DEFAULT 0,
    merged         INTEGER NOT NULL DEFAULT 0,
    updated_at     INTEGER NOT NULL
);
