// Package ydb keeps the validator's tables — commit statuses, branch
// protection and the per-PR lock — in its directory of the YDB database.
// It holds the statements only; what to write and when is the validator's.
// Tx (Store.Bind) works inside a transaction of the platform's YDB store
// (the runner's, so that the lock is read, decided on and written together
// with the inbox and the outbox); Store reads outside any transaction.
package ydb
