// Package storetest is the one conformance suite of the store port
// (store.DB, store.Tx): every adapter — SQLite, YDB — passes the same
// tests. Run holds the platform's part (outbox, inbox, transactions);
// each service with tables runs its own part on the same harness (a
// Suite, on the service's adapter over each database): Stores runs a
// suite once per adapter, SQLite always and YDB when PRSAGA_TEST_YDB
// holds a DSN (otherwise it says plainly that it skipped).
package storetest
