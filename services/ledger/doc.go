// Package ledger is the saga's memory and its operator: it projects every
// saga event into one row per PR (pr_saga), a transition history and an
// event log, using the state machine of contracts.Decide, and announces
// each applied transition as prsaga.saga.state_changed.v1. When runs of a
// PR compete for its row, the projection settles the row from the PR's
// recorded events (contracts.Derive): the final row is the same for any
// delivery order, across runs too (docs/saga-states.md, "Runs").
//
// It also holds the two things the ledger does on its own: the Watchdog,
// which fails sagas stuck in a step (timed_out, with a diagnosis), and the
// Retrier, which answers an operator's retry by replaying the failed step's
// trigger event (contracts.Retry decides). Both write with the projection's
// conditional update, so several ledgers over one database stay correct.
//
// The package holds the decisions, the step's handler (Ledger.OnSagaEvent)
// and the views the API serves. Store is the ledger's tables with what is
// computed over them (transactions, stats, the stuck rows of every state),
// written once; the queries (Tables) live in the adapters ledger/sqlite and
// ledger/ydb. The bus questions live in ledger/jetstream, the HTTP surface
// in ledger/httpapi, and ledger/server wires them to the platform's runner.
package ledger
