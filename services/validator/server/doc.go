// Package server wires the validator for cmd/prsaga: its two durable
// consumers (merge requests to validator.OnMergeRequested; the lock events
// validated, merged, indexed, step_failed, timed_out to
// validator.OnLockEvent), its tables on the service's own database (SQLite
// or YDB) and its HTTP routes (validator/httpapi), over the bare
// repositories under the repos dir.
package server
