// Package contracts is the public interface of prsaga: the CloudEvent types,
// NATS subjects, stream and consumer names, the payloads every event carries,
// their validation, and the saga state machine the ledger projects events with.
//
// It imports nothing of prsaga's own; every other module depends on it. The
// names here are wire names: renaming a type, subject or durable consumer
// replays or loses messages, so they change only with a new version suffix.
package contracts
