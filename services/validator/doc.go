// Package validator is the saga's first step (design §6): it answers a
// prsaga.merge.requested event with prsaga.merge.validated — the request
// pinned to the head it names, the target head it saw and the required
// checks that passed — or with step_failed(VALIDATING) and a code saying why
// not.
//
// It also holds the one-run-per-PR lock of design §4: a PR's lock is taken by
// the run it validates and released only by the PR's merged event (which
// also marks the PR merged for good) or the run's failure at VALIDATING or
// MERGING. The lock follows the holder's current attempt, whichever step it is
// in: a retry's replay (validated, for a retry at MERGING, which never
// passes the validator's decision) moves it to the new attempt, and only a
// failure of that attempt releases it — a slow step of an older attempt that
// gives up late does not free the PR while the retry runs (Lock.After).
//
// This package is the domain: pure decisions (Decide, Lock.After) and the
// handlers that gather their facts and commit their outcome
// (Validator.OnMergeRequested, Validator.OnLockEvent), over the tables as
// one typed transaction (Tx, from Store.Bind). Adapters are at the edges:
// validator/gitrefs reads branch heads, validator/sqlite and validator/ydb
// hold the statements of the tables, validator/httpapi serves the
// forge-like status API, validator/server wires them together. No SQL,
// NATS or HTTP here.
package validator
