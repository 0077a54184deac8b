package ledger_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

var propSeed = flag.Uint64("prop.seed", 0, "seed of TestProjectPropertyWithRetries (0: from the clock)")

// seed is -prop.seed, or one from the clock; it is logged for a rerun.
func seed(t *testing.T) uint64 {
	s := *propSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -prop.seed=%d)", s, s)
	return s
}

// stepEvents builds, for a run and an attempt, the success event of each
// step (caused by trig, the event that starts the first of them).
func (r *run) successesFrom(step contracts.State, trig *event.Event) []*event.Event {
	var out []*event.Event
	cause := trig
	for _, s := range contracts.Steps[indexOf(step):] {
		var e *event.Event
		switch s {
		case contracts.StateValidating:
			e = r.follow(cause, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r.req, BaseSHA: baseSHA})
		case contracts.StateMerging:
			e = r.follow(cause, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r.req, BaseSHA: baseSHA, MergeSHA: mergeSHA})
		case contracts.StateNotifying:
			e = r.follow(cause, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r.req, MergeSHA: mergeSHA})
		case contracts.StateIndexing:
			e = r.follow(cause, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r.req, MergeSHA: mergeSHA, Documents: 1})
		}
		out = append(out, e)
		cause = e
	}
	return out
}

func indexOf(s contracts.State) int {
	for i, st := range contracts.Steps {
		if st == s {
			return i
		}
	}
	return -1
}

// retryReplay retries pr as the operator "prop" and returns the replay
// the retry publishes; what names the retry in a failure.
func (f *fixture) retryReplay(pr, what string) *event.Event {
	f.t.Helper()
	ans, err := f.retrier(f.store).Retry(context.Background(), ledger.RetryRequest{PRID: pr, Actor: "prop"})
	if err != nil || !ans.Accepted {
		f.t.Fatalf("%s: %+v %v", what, ans, err)
	}
	var replay event.Event
	if err := replay.UnmarshalJSON(ans.Replay.Event); err != nil {
		f.t.Fatal(err)
	}
	return &replay
}

// shuffled returns evs with each one delivered 1–3 times, in random order.
func shuffled(rng *rand.Rand, evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		for n := 1 + rng.IntN(3); n > 0; n-- {
			out = append(out, e)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestProjectPropertyWithRetries runs real event sequences through the
// projection and the store — a run that fails (step_failed or the
// watchdog's timed_out) at a random step, is retried by an operator and
// then succeeds — with every event delivered 1–3 times in random order,
// and the first attempt's events redelivered after the retry. The final
// row must be the same as for the in-order run; the history must be one
// unbroken path; each transition is announced once.
func TestProjectPropertyWithRetries(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d))
	f := newFixture(t)
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	for round := range rounds {
		step := contracts.Steps[rng.IntN(len(contracts.Steps))]
		useTimeout := rng.IntN(2) == 0
		pr := contracts.PRID("acme/prop", round+1)
		r := newRun(t, pr)

		// Attempt 1: the steps before `step` succeed, `step` fails.
		before := r.successesFrom(contracts.StateValidating, r.ev)[:indexOf(step)]
		trigger := r.ev
		if len(before) > 0 {
			trigger = before[len(before)-1]
		}
		var fail *event.Event
		if useTimeout {
			fail = r.timedOut(step, trigger, 1)
		} else {
			fail = r.follow(trigger, contracts.TypeStepFailed, serviceOf(step),
				contracts.StepFailed{Request: r.req, Step: step, Code: "boom", Reason: "it broke", Retryable: true})
		}
		phase1 := append([]*event.Event{r.ev, fail}, before...)
		for _, e := range shuffled(rng, phase1) {
			f.project(e)
		}
		if sg := f.saga(pr); sg.State != contracts.StateMergeFailed || sg.FailedStep != step || sg.TimedOut != useTimeout {
			t.Fatalf("seed %d round %d: after attempt 1 %+v, want MERGE_FAILED at %s (timed out %v)", s, round, sg, step, useTimeout)
		}

		// The operator retries; attempt 2 runs from the replay to the end,
		// while attempt 1's events are redelivered among its events.
		replay := f.retryReplay(pr, fmt.Sprintf("seed %d round %d: retry", s, round))
		phase2 := append([]*event.Event{replay}, r.successesFrom(step, replay)...)
		for _, e := range phase1 {
			if rng.IntN(2) == 0 {
				phase2 = append(phase2, e)
			}
		}
		for _, e := range shuffled(rng, phase2) {
			f.project(e)
		}

		got := f.saga(pr)
		want := ledger.Saga{State: contracts.StateMerged, Attempts: 2, Merged: true, MergeSHA: mergeSHA, CorrelationID: r.ev.ID()}
		if got.State != want.State || got.Attempts != want.Attempts || !got.Merged || got.MergeSHA != mergeSHA ||
			got.FailedStep != "" || got.LastError != "" || got.TimedOut || got.CorrelationID != want.CorrelationID {
			t.Fatalf("seed %d round %d (%s, timeout %v): final %+v, want MERGED at attempt 2 of run %s",
				s, round, step, useTimeout, got, r.ev.ID())
		}
		prev := contracts.State("")
		for i, tr := range got.Transitions {
			if tr.From != prev {
				t.Fatalf("seed %d round %d: transition %d %s does not start where the last ended (%s): %s", s, round, i, fmt.Sprint(tr), prev, path(got.Transitions))
			}
			prev = tr.To
		}
		// Idempotence: everything again changes nothing.
		for _, e := range append(phase1, phase2...) {
			if res := f.project(e); !res.Duplicate {
				t.Fatalf("seed %d round %d: redelivered %s not a duplicate: %+v", s, round, e.Type(), res)
			}
		}
	}
	// One announcement per transition, over every PR.
	total := 0
	for round := range rounds {
		total += len(f.saga(contracts.PRID("acme/prop", round+1)).Transitions)
	}
	if n := len(f.outboxOf(f.db, contracts.SubjectStateChanged)); n != total {
		t.Fatalf("%d state_changed announced for %d transitions", n, total)
	}
}

func serviceOf(step contracts.State) string {
	return map[contracts.State]string{contracts.StateValidating: contracts.ServiceValidator, contracts.StateMerging: contracts.ServiceMerger,
		contracts.StateNotifying: contracts.ServiceNotifier, contracts.StateIndexing: contracts.ServiceIndexer}[step]
}
