package validator_test

import (
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

func failed(step contracts.State, code string) *contracts.StepFailed {
	return &contracts.StepFailed{Request: request(), Step: step, Code: code, Reason: "r"}
}

func TestLockAfter(t *testing.T) {
	held := validator.Lock{Holder: run, Attempt: 2}
	free := validator.Lock{}
	merged := validator.Lock{Merged: true}
	heldMerged := validator.Lock{Holder: run, Attempt: 2, Merged: true}
	for _, tc := range []struct {
		name    string
		lock    validator.Lock
		env     contracts.Envelope
		want    validator.Lock
		changed bool
	}{
		{"holder indexed releases", held, envelope(run, 2, &contracts.Indexed{}), free, true},
		{"holder indexed of an older attempt still releases (the run is done)", held, envelope(run, 1, &contracts.Indexed{}), free, true},
		{"other run's indexed keeps", held, envelope(other, 2, &contracts.Indexed{}), held, false},
		{"holder failed validating releases", held, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeChecksFailed)), free, true},
		{"holder failed merging releases", held, envelope(run, 3, failed(contracts.StateMerging, contracts.CodeConflict)), free, true},
		{"holder failed notifying keeps", held, envelope(run, 2, failed(contracts.StateNotifying, contracts.CodeWebhookFailed)), held, false},
		{"holder failed indexing keeps", held, envelope(run, 2, failed(contracts.StateIndexing, contracts.CodeIndexError)), held, false},
		{"stale failure of an older attempt keeps", held, envelope(run, 1, failed(contracts.StateMerging, contracts.CodeConflict)), held, false},
		{"other run's failure keeps", held, envelope(other, 2, failed(contracts.StateValidating, contracts.CodeChecksFailed)), held, false},
		{"in_progress answer keeps", held, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeInProgress)), held, false},
		{"already_merged answer keeps", heldMerged, envelope(run, 2, failed(contracts.StateValidating, contracts.CodeAlreadyMerged)), heldMerged, false},
		{"timed out keeps", held, envelope(run, 2, &contracts.TimedOut{Step: contracts.StateMerging}), held, false},
		{"merged marks merged", held, envelope(run, 2, &contracts.Merged{}), heldMerged, true},
		{"merged of another run marks merged", free, envelope(other, 1, &contracts.Merged{}), merged, true},
		{"merged again changes nothing", merged, envelope(run, 1, &contracts.Merged{}), merged, false},
		{"indexed after merged keeps merged", heldMerged, envelope(run, 2, &contracts.Indexed{}), merged, true},
		{"validated changes nothing", held, envelope(run, 2, &contracts.Validated{}), held, false},
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
