// Package sqlite keeps the ledger's tables (pr_saga, saga_transition,
// saga_event, retry_answer, and saga_state_count, which triggers on
// pr_saga keep) in the service's SQLite database: the write side as a
// ledger.Tx bound to the platform's transaction (so that the projection,
// the runner's inbox and the outbox commit together), and the read side the
// API serves.
package sqlite
