package validator_test

import (
	"math/rand/v2"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/validator"
)

func TestInertIsValidatedNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  contracts.Envelope
		want bool
	}{
		{"validated", envelope(run, 1, &contracts.Validated{}), true},
		{"replayed validated", replay(run, 2, &contracts.Validated{}), false},
		{"merged", envelope(run, 1, &contracts.Merged{}), false},
		{"indexed", envelope(run, 1, &contracts.Indexed{}), false},
		{"step_failed", envelope(run, 1, failed(contracts.StateMerging, contracts.CodeConflict)), false},
		{"timed_out", envelope(run, 1, &contracts.TimedOut{Step: contracts.StateMerging}), false},
	} {
		if got := validator.Inert(tc.env); got != tc.want {
			t.Errorf("Inert(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The lock consumer skips inert events, so none may ever change a lock:
// random histories of three runs — requests validated as Decide takes the
// lock, retries replaying validated, and every other lock event, stale
// ones included — and after every step each validated emitted so far,
// applied again, leaves the lock as it is.
func TestInertEventsChangeNoLock(t *testing.T) {
	runs := []string{"run-a", "run-b", "run-c"}
	rng := rand.New(rand.NewPCG(1, 2))
	for h := 0; h < 3000; h++ {
		var lock validator.Lock
		latest := map[string]int{} // each run's latest attempt: attempts only grow
		var emitted []contracts.Envelope
		for step := 0; step < 12; step++ {
			r := runs[rng.IntN(len(runs))]
			old := 1 + rng.IntN(max(latest[r], 1)) // an attempt the run has had (or its first)
			switch rng.IntN(8) {
			case 0, 1: // a request (or a retry at VALIDATING), validated if Decide would
				a := latest[r] + 1
				latest[r] = a
				if !lock.Merged && (!lock.Held() || lock.Holder == r) {
					lock, _ = lock.Take(r, a)
					emitted = append(emitted, envelope(r, a, &contracts.Validated{}))
				}
			case 2: // a retry at MERGING replays validated
				a := latest[r] + 1
				latest[r] = a
				lock, _ = lock.After(replay(r, a, &contracts.Validated{}))
			case 3:
				lock, _ = lock.After(envelope(r, old, &contracts.Merged{}))
			case 4:
				lock, _ = lock.After(envelope(r, old, &contracts.Indexed{}))
			case 5:
				st := []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying}[rng.IntN(3)]
				lock, _ = lock.After(envelope(r, old, failed(st, contracts.CodeConflict)))
			case 6:
				lock, _ = lock.After(envelope(r, old, &contracts.TimedOut{Step: contracts.StateMerging}))
			case 7: // a validated emitted earlier, delivered again now
				if len(emitted) > 0 {
					lock, _ = lock.After(emitted[rng.IntN(len(emitted))])
				}
			}
			for _, e := range emitted {
				if !validator.Inert(e) {
					t.Fatalf("history %d: emitted %+v is not inert", h, e.Meta)
				}
				if got, changed := lock.After(e); changed || got != lock {
					t.Fatalf("history %d, step %d: validated of %s attempt %d changed %+v to %+v", h, step, e.Meta.CorrelationID, e.Meta.Attempt, lock, got)
				}
			}
		}
	}
}
