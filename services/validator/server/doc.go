// Package server wires the validator for cmd/prsaga: its two durable
// consumers (merge requests; the lock events merged, indexed, step_failed,
// timed_out), its tables and its HTTP routes, over the service's own SQLite
// database and the bare repositories under the repos dir.
package server
