-- The merger's journal (docs/adr/0004-merge-journal.md): every merge or
-- squash commit the merger put, or was about to put, on a target branch,
-- recorded in its own transaction before the ref moved. A commit of this
-- table reachable from the target is the proof that the PR is merged; no
-- commit message is.
CREATE TABLE IF NOT EXISTS merge_journal (
    pr_id          TEXT    NOT NULL,
    merge_sha      TEXT    NOT NULL,
    repo           TEXT    NOT NULL,
    target_branch  TEXT    NOT NULL,
    strategy       TEXT    NOT NULL,
    base_sha       TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    recorded_at    INTEGER NOT NULL,
    PRIMARY KEY (pr_id, merge_sha)
) WITHOUT ROWID;
