-- Step durations read a bounded window of the most recent transitions
-- (ledger.StepWindow) instead of the whole history. The index holds every
-- column that read needs (pr_id and seq, the primary key, end every entry
-- of a WITHOUT ROWID table's index anyway), so the window is one backwards
-- range scan of the index and the table is not read. New entries go to the
-- index's right edge: time only moves forward.
CREATE INDEX IF NOT EXISTS idx_transition_at ON saga_transition (at, pr_id, seq, to_state, inferred);
