package ledger_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// recorder is a ledger.Metrics that writes down what it was told.
type recorder struct {
	mu    sync.Mutex
	calls []string
	steps map[contracts.State][]time.Duration
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) Transition(from, to contracts.State) { r.add(fmt.Sprintf("%s->%s", from, to)) }
func (r *recorder) MergeFailed(step contracts.State, code string) {
	r.add(fmt.Sprintf("failed %s %s", step, code))
}
func (r *recorder) WatchdogTimeout(step contracts.State) { r.add("timeout " + string(step)) }
func (r *recorder) StepDuration(step contracts.State, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.steps == nil {
		r.steps = map[contracts.State][]time.Duration{}
	}
	r.steps[step] = append(r.steps[step], d)
}

var _ ledger.Metrics = (*recorder)(nil)

// Every applied transition is counted once, with the time spent in the
// state it left; a duplicate counts nothing; a failure counts its code.
func TestProjectionReportsMetricsAfterCommit(t *testing.T) {
	f := newWDFixture(t)
	rec := &recorder{}
	f.proj.Metrics = rec
	ok, bad := newRun(t, "acme/m#1"), newRun(t, "acme/m#2")
	evs := ok.happy()
	for i, e := range evs {
		f.at(t0.Add(time.Duration(i)*time.Second), e)
	}
	f.at(t0.Add(10*time.Second), evs[2]) // a redelivery: recorded already
	f.at(t0, bad.ev)
	f.at(t0.Add(250*time.Millisecond), bad.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed))

	want := []string{"->VALIDATING", "VALIDATING->MERGING", "MERGING->NOTIFYING", "NOTIFYING->INDEXING", "INDEXING->MERGED",
		"->VALIDATING", "VALIDATING->MERGE_FAILED", "failed VALIDATING checks_failed"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("calls\n got %v\nwant %v", rec.calls, want)
	}
	for _, st := range []contracts.State{contracts.StateMerging, contracts.StateNotifying, contracts.StateIndexing} {
		if got := rec.steps[st]; !slices.Equal(got, []time.Duration{time.Second}) {
			t.Errorf("%s durations %v, want [1s]", st, got)
		}
	}
	if got := rec.steps[contracts.StateValidating]; !slices.Equal(got, []time.Duration{time.Second, 250 * time.Millisecond}) {
		t.Errorf("VALIDATING durations %v, want [1s 250ms]", got)
	}
}

// Two ledgers applying one event at once count its transition once.
func TestProjectionCountsARaceOnce(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	f.proj.Metrics = rec
	concurrentSameEvent(t, f, f.store, f.store)
	if want := []string{"->VALIDATING", "VALIDATING->MERGING"}; !slices.Equal(rec.calls, want) {
		t.Errorf("calls %v, want %v", rec.calls, want)
	}
}

// The watchdog counts its timeouts; the projection counts the failure
// with code timed_out and the time spent in the step.
func TestWatchdogReportsTimeouts(t *testing.T) {
	f := newWDFixture(t)
	rec := &recorder{}
	f.proj.Metrics = rec
	r := newRun(t, "acme/m#4")
	f.at(t0, r.ev, r.validated())
	w := f.watchdog(f.store, wdConfig)
	w.Metrics = rec
	f.clock.Set(t0.Add(2 * time.Minute))
	if res := f.tick(w); res.Moved != 1 {
		t.Fatalf("tick: %+v", res)
	}
	want := []string{"->VALIDATING", "VALIDATING->MERGING", "MERGING->MERGE_FAILED", "failed MERGING timed_out", "timeout MERGING"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("calls\n got %v\nwant %v", rec.calls, want)
	}
	if got := rec.steps[contracts.StateMerging]; !slices.Equal(got, []time.Duration{2 * time.Minute}) {
		t.Errorf("MERGING durations %v, want [2m]", got)
	}
}
