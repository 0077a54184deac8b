// Package ledger is the saga's memory: it projects every saga event into one
// row per PR (pr_saga), a transition history and an event log, using the
// state machine of contracts.Decide, and announces each applied transition
// as prsaga.saga.state_changed.v1.
//
// The package holds the decisions and the views the API serves; the tables
// live in ledger/sqlite, the HTTP surface in ledger/httpapi, and
// ledger/server wires them to the platform's runner.
package ledger
