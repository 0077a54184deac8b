package validator_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/validator"
)

func envelope(corr string, attempt int, payload any) contracts.Envelope {
	e := event.New()
	e.SetID("evt-1")
	return contracts.Envelope{Event: &e, Meta: contracts.Meta{CorrelationID: corr, Attempt: attempt}, Payload: payload}
}

func replay(corr string, attempt int, payload any) contracts.Envelope {
	e := envelope(corr, attempt, payload)
	e.Meta.ReplayOf = "evt-0"
	return e
}

func failed(step contracts.State, code string) *contracts.StepFailed {
	return &contracts.StepFailed{Request: request(), Step: step, Code: code, Reason: "r"}
}

func TestLockAfter(t *testing.T) {
	held := validator.Lock{Holder: run, Attempt: 2}
	free := validator.Lock{Attempt: 2} // released by attempt 2
	never := validator.Lock{}
	merged := validator.Lock{Merged: true}
	heldMerged := validator.Lock{Holder: run, Attempt: 2, Merged: true}
	freeMerged := validator.Lock{Attempt: 2, Merged: true}
	for _, tc := range []struct {
		name    string
		lock    validator.Lock
		env     contracts.Envelope
		want    validator.Lock
		changed bool
	}{
		{"holder failed validating releases", held, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeChecksFailed)), free, true},
		{"holder failed merging in a later attempt releases", held, envelope(run, 3, failed(contracts.StateMerging, contracts.CodeConflict)), validator.Lock{Attempt: 3}, true},
		{"holder failed notifying keeps", held, envelope(run, 2, failed(contracts.StateNotifying, contracts.CodeWebhookFailed)), held, false},
		{"holder failed indexing keeps", held, envelope(run, 2, failed(contracts.StateIndexing, contracts.CodeIndexError)), held, false},
		{"stale failure of an older attempt keeps", held, envelope(run, 1, failed(contracts.StateMerging, contracts.CodeConflict)), held, false},
		{"other run's failure keeps", held, envelope(other, 2, failed(contracts.StateValidating, contracts.CodeChecksFailed)), held, false},
		{"in_progress answer keeps", held, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeInProgress)), held, false},
		{"already_merged answer keeps", heldMerged, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeAlreadyMerged)), heldMerged, false},
		{"validated changes nothing", held, envelope(run, 2, &contracts.Validated{}), held, false},
		{"validated does not take a free lock", free, envelope(other, 3, &contracts.Validated{}), free, false},
		{"lock_lost answer keeps", held, envelope(run, 2, failed(contracts.StateMerging, contracts.CodeLockLost)), held, false},
		{"timed out keeps", held, envelope(run, 2, &contracts.TimedOut{Step: contracts.StateMerging}), held, false},
		{"merged marks merged and frees the lock", held, envelope(run, 2, &contracts.Merged{}), freeMerged, true},
		{"merged of an older attempt frees it too (the PR is merged)", held, envelope(run, 1, &contracts.Merged{}), freeMerged, true},
		{"merged of another run frees the holder's lock", held, envelope(other, 1, &contracts.Merged{}), freeMerged, true},
		{"merged again frees a lock a replay took after the merge", heldMerged, envelope(run, 2, &contracts.Merged{}), freeMerged, true},
		{"merged of another run marks merged", never, envelope(other, 1, &contracts.Merged{}), merged, true},
		{"merged again changes nothing", merged, envelope(run, 1, &contracts.Merged{}), merged, false},
		{"holder's timeout of a later attempt moves the lock", held, envelope(run, 3, &contracts.TimedOut{Step: contracts.StateMerging}), validator.Lock{Holder: run, Attempt: 3}, true},
		{"holder's failure at NOTIFYING of a later attempt moves the lock", held, envelope(run, 3, failed(contracts.StateNotifying, contracts.CodeWebhookFailed)), validator.Lock{Holder: run, Attempt: 3}, true},
		{"after the move, the old attempt's failure keeps", validator.Lock{Holder: run, Attempt: 3}, envelope(run, 2, failed(contracts.StateMerging, contracts.CodeConflict)), validator.Lock{Holder: run, Attempt: 3}, false},
		{"other run's later attempt changes nothing", held, envelope(other, 9, &contracts.TimedOut{Step: contracts.StateMerging}), held, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := tc.lock.After(tc.env)
			if got != tc.want || changed != tc.changed {
				t.Errorf("%+v.After = %+v, %v; want %+v, %v", tc.lock, got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestLockTake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lock    validator.Lock
		attempt int
		want    validator.Lock
		changed bool
	}{
		{"free", validator.Lock{}, 1, validator.Lock{Holder: run, Attempt: 1}, true},
		{"re-entrant same attempt", validator.Lock{Holder: run, Attempt: 2}, 2, validator.Lock{Holder: run, Attempt: 2}, false},
		{"re-entrant older attempt", validator.Lock{Holder: run, Attempt: 2}, 1, validator.Lock{Holder: run, Attempt: 2}, false},
		{"re-entrant newer attempt", validator.Lock{Holder: run, Attempt: 2}, 3, validator.Lock{Holder: run, Attempt: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := tc.lock.Take(run, tc.attempt)
			if got != tc.want || changed != tc.changed {
				t.Errorf("Take = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

// A retry at MERGING merges only under its run's lock.
func TestLockRegrant(t *testing.T) {
	held := validator.Lock{Holder: run, Attempt: 2}
	free := validator.Lock{Attempt: 2} // released by attempt 2
	for _, tc := range []struct {
		name             string
		lock             validator.Lock
		run              string
		attempt          int
		want             validator.Lock
		changed, granted bool
	}{
		{"the holder's retry moves the lock to its attempt", held, run, 3, validator.Lock{Holder: run, Attempt: 3}, true, true},
		{"the holder's retry at its attempt keeps it", held, run, 2, held, false, true},
		{"a retry takes a lock its older attempt released", free, run, 3, validator.Lock{Holder: run, Attempt: 3}, true, true},
		{"a retry takes a free lock of a merged PR (the merger proves it merged)", validator.Lock{Attempt: 1, Merged: true}, run, 2, validator.Lock{Holder: run, Attempt: 2, Merged: true}, true, true},
		{"a stale retry of the releasing attempt is refused", free, run, 2, free, false, false},
		{"another run's lock refuses the retry", held, other, 5, held, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, granted := tc.lock.Regrant(tc.run, tc.attempt)
			if got != tc.want || changed != tc.changed || granted != tc.granted {
				t.Errorf("%+v.Regrant(%s, %d) = %+v, %v, %v; want %+v, %v, %v", tc.lock, tc.run, tc.attempt, got, changed, granted, tc.want, tc.changed, tc.granted)
			}
		})
	}
}

// Random histories of three runs — requests validated as Decide takes the
// lock, retries at MERGING through Regrant, and every other lock event,
// stale ones included: whenever a run is let merge (validated by Decide, or
// a retry granted), the lock is that run's and no other run's merge is let
// through until the lock is released.
func TestMergesOnlyUnderTheRunsLock(t *testing.T) {
	runs := []string{"run-a", "run-b", "run-c"}
	rng := rand.New(rand.NewPCG(1, 2))
	grants := 0
	for h := 0; h < 3000; h++ {
		var lock validator.Lock
		latest := map[string]int{} // each run's latest attempt: attempts only grow
		merging := ""              // the run last let merge while the lock is held
		for step := 0; step < 12; step++ {
			r := runs[rng.IntN(len(runs))]
			old := 1 + rng.IntN(max(latest[r], 1))
			let := false
			switch rng.IntN(7) {
			case 0, 1: // a request (or a retry at VALIDATING), validated if Decide would
				a := latest[r] + 1
				latest[r] = a
				if !lock.Merged && (!lock.Held() || lock.Holder == r) {
					lock, _ = lock.Take(r, a)
					let = true
				}
			case 2: // a retry at MERGING
				a := latest[r] + 1
				latest[r] = a
				lock, _, let = lock.Regrant(r, a)
			case 3:
				lock, _ = lock.After(envelope(r, old, &contracts.Merged{}))
			case 4:
				lock, _ = lock.After(envelope(r, old, failed(contracts.StateValidating, contracts.CodeInProgress)))
			case 5:
				st := []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying}[rng.IntN(3)]
				lock, _ = lock.After(envelope(r, old, failed(st, contracts.CodeConflict)))
			case 6:
				lock, _ = lock.After(envelope(r, old, &contracts.TimedOut{Step: contracts.StateMerging}))
			}
			if !lock.Held() {
				merging = ""
			}
			if let {
				grants++
				if lock.Holder != r {
					t.Fatalf("history %d, step %d: %s let merge, the lock is %+v", h, step, r, lock)
				}
				if merging != "" && merging != r {
					t.Fatalf("history %d, step %d: %s let merge while %s's merge holds the lock", h, step, r, merging)
				}
				merging = r
			}
		}
	}
	if grants == 0 {
		t.Fatal("no run was ever let merge: the histories test nothing")
	}
}
