package ledger

import (
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Metrics receives what the projection and the watchdog did, once it has
// committed (telemetry.Telemetry is one). Implementations are safe for
// concurrent use. Each ledger instance reports only what it applied itself,
// so the sum over instances counts every transition once.
type Metrics interface {
	// Transition counts one applied transition (from "" when the saga starts).
	Transition(from, to contracts.State)
	// MergeFailed counts a move to MERGE_FAILED at step, with the failure's
	// code (timed_out for the watchdog).
	MergeFailed(step contracts.State, code string)
	// StepDuration observes the time a saga spent in step.
	StepDuration(step contracts.State, d time.Duration)
	// WatchdogTimeout counts a saga the watchdog moved out of step.
	WatchdogTimeout(step contracts.State)
}

// StateCount is how many sagas one state holds, and since when the one
// waiting longest has been there (its updated_at; zero when none).
type StateCount struct {
	Sagas  int
	Oldest time.Time
}

// CodeTimedOut is the failure code MergeFailed reports for a watchdog
// timeout (timed_out events carry no code of their own).
const CodeTimedOut = "timed_out"

// observe reports an applied decision to m once tx has committed: its
// transitions, a failure's step and code, and the time the saga spent in
// the state it left (from prev.UpdatedAt, the time of the transition into
// it: the latest transition of a decision is never an inferred one).
func observe(tx Tx, m Metrics, env contracts.Envelope, prev, next contracts.Row, ts []Transition, now time.Time) {
	if m == nil || len(ts) == 0 {
		return
	}
	tx.AfterCommit(func() {
		for _, t := range ts {
			m.Transition(t.From, t.To)
			if t.To == contracts.StateMergeFailed {
				m.MergeFailed(next.FailedStep, failureCode(env))
			}
		}
		if prev.Exists && prev.State.InFlight() && !prev.UpdatedAt.IsZero() {
			m.StepDuration(prev.State, now.Sub(prev.UpdatedAt))
		}
	})
}

// failureCode is the code of the failure an event reports.
func failureCode(env contracts.Envelope) string {
	switch p := env.Payload.(type) {
	case *contracts.StepFailed:
		return p.Code
	case *contracts.TimedOut:
		return CodeTimedOut
	}
	return "unknown"
}
