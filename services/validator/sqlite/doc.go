// Package sqlite stores the validator's tables in its SQLite database:
// commit statuses, branch protection and the per-PR lock. It holds the
// statements only; what to write and when is the validator's. Tx (Bind) is
// the tables inside a transaction — a runner commit, where the lock is read
// and written with the outbox insert, or one of the validator's own; Store
// reads outside any transaction, through the database's read pool.
package sqlite
