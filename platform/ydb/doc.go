// Package ydb is the production store: one YDB database shared by every
// service, each service's tables in a directory of its own
// (<database>/prsaga/<service>/…, design §5 "own database or prefix"),
// reached through ydb-go-sdk's query service.
//
// Transactions are serializable read-write and run through the SDK's
// retrying DoTx: the whole function runs again after an optimistic-lock
// conflict (ABORTED, "transaction locks invalidated"), so it must be free of
// side effects. YDB has no affected-row count and a duplicate INSERT aborts
// the whole transaction, so every conditional write reads first, in the
// same transaction, and then writes: a concurrent writer of what was read
// invalidates the read's lock, the commit fails, DoTx retries and the re-read
// sees the winner's row. The platform's own writes (inbox, outbox) are
// buffered and written when the function returns, after the service's reads
// and writes, so that within one unit of work no table is read after it was
// written. (UpdateEach runs several units in one transaction: a later unit
// may read what an earlier one wrote; see docs/ydb.md.)
//
// Keys never begin with a time-ordered id: the outbox and the inbox begin
// with Shard(id). Every statement is a q… constant, type-checked offline
// against the migrations by ydbcheck.
//
// Schema changes are YQL migrations embedded per component (the platform's
// outbox and inbox here, each service's tables in the service), applied at
// Open outside any transaction (YDB runs DDL and DML in separate
// transactions) and recorded in schema_migrations. Every migration must be
// idempotent (CREATE TABLE IF NOT EXISTS): replicas starting together may
// run it twice.
//
// Every statement carries its values as typed parameters; the only text
// spliced into YQL is the validated table-path prefix of the
// PRAGMA TablePathPrefix line.
package ydb
