-- Sagas per state, kept by triggers on pr_saga, so that stats, the
-- dashboard and the in-flight gauges count a million sagas without
-- reading a million index entries. Triggers, not the projection's code:
-- every writer of pr_saga (the projection, a retry, the watchdog, the
-- benchmark's preload, an operator's SQL) keeps the counts right, and a
-- rolled-back write takes its count back with it.
CREATE TABLE IF NOT EXISTS saga_state_count (
    state TEXT    NOT NULL PRIMARY KEY,
    sagas INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO saga_state_count (state, sagas)
    SELECT state, count(*) FROM pr_saga WHERE true GROUP BY state
    ON CONFLICT (state) DO UPDATE SET sagas = excluded.sagas;
-- The migration runner splits statements at ";" + newline: inside a
-- trigger, a ";" is followed by more on the same line.
CREATE TRIGGER IF NOT EXISTS saga_state_count_insert AFTER INSERT ON pr_saga BEGIN
    INSERT INTO saga_state_count (state, sagas) VALUES (new.state, 1) ON CONFLICT (state) DO UPDATE SET sagas = sagas + 1; END;
CREATE TRIGGER IF NOT EXISTS saga_state_count_update AFTER UPDATE OF state ON pr_saga WHEN old.state IS NOT new.state BEGIN
    UPDATE saga_state_count SET sagas = sagas - 1 WHERE state = old.state; INSERT INTO saga_state_count (state, sagas) VALUES (new.state, 1) ON CONFLICT (state) DO UPDATE SET sagas = sagas + 1; END;
CREATE TRIGGER IF NOT EXISTS saga_state_count_delete AFTER DELETE ON pr_saga BEGIN
    UPDATE saga_state_count SET sagas = sagas - 1 WHERE state = old.state; END;
