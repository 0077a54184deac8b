// Package sqlite stores the validator's tables in its SQLite database:
// commit statuses, branch protection and the per-PR lock. Functions that take
// a *sqlite.Tx run inside a runner commit (the lock read and write, in the
// same transaction as the outbox insert); Store's methods open their own
// transaction or read through the database's read pool, for the HTTP API.
package sqlite
