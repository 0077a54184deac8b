-- The per-state counts by plain updates of seeded rows instead of an
-- upsert: an upsert's DO UPDATE resolves a conflict by ABORT whatever the
-- statement says, so every write of pr_saga, made a two-table write by
-- these triggers, kept a statement journal (a copy of each page it
-- touched) to undo itself halfway. With plain updates and the writes'
-- OR FAIL (ledger/sqlite SaveSaga) SQLite needs none. Every state has its
-- row from here on; a state outside the contract's is not counted.
INSERT INTO saga_state_count (state, sagas) VALUES ('VALIDATING', 0), ('MERGING', 0), ('NOTIFYING', 0), ('INDEXING', 0), ('MERGED', 0), ('MERGE_FAILED', 0)
    ON CONFLICT (state) DO NOTHING;
DROP TRIGGER IF EXISTS saga_state_count_insert;
CREATE TRIGGER saga_state_count_insert AFTER INSERT ON pr_saga BEGIN
    UPDATE saga_state_count SET sagas = sagas + 1 WHERE state = new.state; END;
DROP TRIGGER IF EXISTS saga_state_count_update;
CREATE TRIGGER saga_state_count_update AFTER UPDATE OF state ON pr_saga WHEN old.state IS NOT new.state BEGIN
    UPDATE saga_state_count SET sagas = sagas - 1 WHERE state = old.state; UPDATE saga_state_count SET sagas = sagas + 1 WHERE state = new.state; END;
