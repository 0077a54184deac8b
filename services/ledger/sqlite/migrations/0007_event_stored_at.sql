-- When the stream stored each event (JetStream's timestamp of its
-- message): the time the transitions it caused carry, so that a ledger
-- restored from a backup and catching up from the stream keeps the times
-- the events happened. NULL on rows recorded before: their transitions
-- carry received_at, which readers take in its place.
ALTER TABLE saga_event ADD COLUMN stored_at INTEGER;
