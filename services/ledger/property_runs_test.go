package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// runPlan is what one run of a PR does. Attempt 1 succeeds up to fail1 and
// fails there (timed out or by the step's own failure); fail1 "" is a clean
// success. With retry, the operator retries the failure and attempt 2 runs
// from the failed step to fail2 ("" : to MERGED).
type runPlan struct {
	r                  *run
	fail1, fail2       contracts.State
	timeout1, timeout2 bool
	retry              bool
}

// want is the row the plan ends with.
func (p runPlan) want() ledger.Saga {
	fail, timeout, attempts := p.fail1, p.timeout1, 1
	if p.retry {
		fail, timeout, attempts = p.fail2, p.timeout2, 2
	}
	s := ledger.Saga{CorrelationID: p.r.ev.ID(), Attempts: attempts}
	if fail == "" {
		s.State, s.Merged, s.MergeSHA = contracts.StateMerged, true, mergeSHA
		return s
	}
	s.State, s.FailedStep, s.TimedOut = contracts.StateMergeFailed, fail, timeout
	s.LastError = failCode(fail) + ": it broke"
	if timeout {
		s.LastError = "timed_out: stuck"
	}
	if indexOf(fail) >= indexOf(contracts.StateNotifying) {
		s.Merged, s.MergeSHA = true, mergeSHA
	}
	return s
}

func failCode(step contracts.State) string {
	return map[contracts.State]string{contracts.StateValidating: contracts.CodeChecksFailed, contracts.StateMerging: contracts.CodeConflict,
		contracts.StateNotifying: contracts.CodeWebhookFailed, contracts.StateIndexing: contracts.CodeIndexError}[step]
}

// attempt lists one attempt's events: from trigger (the request or a
// replay, which carries the attempt), the successes from `from` on, up to a
// failure at fail ("" : to the end).
func (r *run) attempt(trigger *event.Event, from, fail contracts.State, timeout bool) []*event.Event {
	r.t.Helper()
	all := r.successesFrom(from, trigger)
	if fail == "" {
		return all
	}
	evs := all[:indexOf(fail)-indexOf(from)]
	cause := trigger
	if len(evs) > 0 {
		cause = evs[len(evs)-1]
	}
	if timeout {
		m, err := contracts.MetaOf(cause)
		if err != nil {
			r.t.Fatal(err)
		}
		return append(evs, r.timedOut(fail, cause, m.Attempt))
	}
	return append(evs, r.follow(cause, contracts.TypeStepFailed, serviceOf(fail),
		contracts.StepFailed{Request: r.req, Step: fail, Code: failCode(fail), Reason: "it broke", Retryable: true}))
}

// refusedRun is a request made while another run held the PR: the
// validator answers it with in_progress.
func refusedRun(t testing.TB, pr string) []*event.Event {
	r := newRun(t, pr)
	return []*event.Event{r.ev, r.follow(r.ev, contracts.TypeStepFailed, contracts.ServiceValidator,
		contracts.StepFailed{Request: r.req, Step: contracts.StateValidating, Code: contracts.CodeInProgress, Reason: "run x is in flight", Retryable: true})}
}

// randomPlans draws 2–3 runs of one PR. Every run but the last stops before
// the merge by a step's own failure (what lets a new run start); the last
// ends anywhere.
func randomPlans(t testing.TB, rng *rand.Rand, pr string) []runPlan {
	n := 2 + rng.IntN(2)
	plans := make([]runPlan, n)
	for i := range plans {
		p := runPlan{r: newRun(t, pr)}
		last := i == n-1
		if !last {
			// Stops at VALIDATING or MERGING by a step_failed, possibly
			// after a timeout and a retry.
			p.fail1 = contracts.Steps[rng.IntN(2)]
			p.timeout1 = rng.IntN(2) == 0
			p.retry = p.timeout1 || rng.IntN(2) == 0
			if p.retry {
				p.fail2 = contracts.Steps[indexOf(p.fail1)+rng.IntN(2-indexOf(p.fail1))]
			} else {
				p.timeout1 = false
			}
		} else if rng.IntN(4) > 0 {
			p.fail1 = contracts.Steps[rng.IntN(len(contracts.Steps))]
			p.timeout1 = rng.IntN(2) == 0
			p.retry = rng.IntN(3) > 0
			if p.retry && rng.IntN(2) == 0 {
				p.fail2 = contracts.Steps[indexOf(p.fail1)+rng.IntN(len(contracts.Steps)-indexOf(p.fail1))]
				p.timeout2 = rng.IntN(2) == 0
			}
		}
		plans[i] = p
	}
	return plans
}

// deliveries is the ledger's view of the bus: events published and not yet
// projected, and those projected (which may come again).
type deliveries struct {
	f         *fixture
	rng       *rand.Rand
	pool      []*event.Event
	delivered []*event.Event
	n         int
}

func (d *deliveries) publish(evs ...*event.Event) { d.pool = append(d.pool, evs...) }

// step projects one event: mostly a new one, sometimes one again.
func (d *deliveries) step() bool {
	if len(d.delivered) > 0 && (len(d.pool) == 0 || d.rng.IntN(5) == 0) {
		e := d.delivered[d.rng.IntN(len(d.delivered))]
		if res := d.f.project(e); !res.Duplicate {
			d.f.t.Fatalf("redelivered %s %s is not a duplicate: %+v", e.Type(), e.ID(), res)
		}
		return len(d.pool) > 0
	}
	if len(d.pool) == 0 {
		return false
	}
	i := d.rng.IntN(len(d.pool))
	e := d.pool[i]
	d.pool = append(d.pool[:i], d.pool[i+1:]...)
	d.f.project(e)
	d.delivered = append(d.delivered, e)
	d.n++
	return true
}

// until projects events in random order until ok holds and every event of
// mustHave has been projected; it fails when the bus runs dry first.
func (d *deliveries) until(what string, ok func(ledger.Saga) bool, pr string, mustHave []*event.Event) {
	d.f.t.Helper()
	for {
		if ok(d.row(pr)) && d.all(mustHave) {
			return
		}
		if !d.step() && len(d.pool) == 0 {
			if ok(d.row(pr)) && d.all(mustHave) {
				return
			}
			d.f.t.Fatalf("every event projected, but the row is not %s: %+v", what, d.row(pr))
		}
	}
}

// row is the PR's saga, the zero Saga while there is none.
func (d *deliveries) row(pr string) ledger.Saga {
	d.f.t.Helper()
	s, err := d.f.store.Get(context.Background(), pr)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Saga{}
	}
	if err != nil {
		d.f.t.Fatalf("get %s: %v", pr, err)
	}
	return s
}

func (d *deliveries) all(evs []*event.Event) bool {
	for _, e := range evs {
		for _, p := range d.pool {
			if p == e {
				return false
			}
		}
	}
	return true
}

// TestProjectPropertyAcrossRuns is the promise "the final row is the same
// for any delivery order" across runs (issue 14 item 1): 2–3 runs per PR,
// each stopping before the merge except the last, with timeouts, operator
// retries (replays at attempt 2) and sometimes a request refused with
// in_progress while a run holds the PR; every event is projected once in a
// random order that interleaves the runs — a later run's events before an
// earlier run's, a run's failure before its request — with random
// redeliveries. The operator retries only once the row shows the failure,
// as the API allows. The final row must be the last run's outcome; the
// history one unbroken path; each transition announced once.
func TestProjectPropertyAcrossRuns(t *testing.T) {
	s := seed(t)
	rounds := 40
	if testing.Short() {
		rounds = 15
	}
	propertyAcrossRuns(t, s, rounds)
}

// TestProjectPropertyAcrossRunsSeeds replays seeds that once failed.
// 1796142019653526610: a run that had merged, failed at INDEXING and been
// retried lost the retry (attempt 2 shown as 1) when it took the row back
// from an earlier run before its replay was delivered; 1796142565225524439
// (at INDEXING) and 1796142589582849407 (at NOTIFYING) the same.
func TestProjectPropertyAcrossRunsSeeds(t *testing.T) {
	for _, s := range []uint64{1796142019653526610, 1796142565225524439, 1796142589582849407} {
		// All 40 rounds even with -short: the failures were in later rounds.
		t.Run(fmt.Sprint(s), func(t *testing.T) { propertyAcrossRuns(t, s, 40) })
	}
}

func propertyAcrossRuns(t *testing.T, s uint64, rounds int) {
	rng := rand.New(rand.NewPCG(s, s^0x2545f4914f6cdd1d))
	f := newFixture(t)
	total := 0
	for round := range rounds {
		pr := contracts.PRID("acme/runs", round+1)
		d := &deliveries{f: f, rng: rng}
		plans := randomPlans(t, rng, pr)
		refusedDuring := -1
		if rng.IntN(2) == 0 {
			refusedDuring = rng.IntN(len(plans))
		}
		desc := fmt.Sprintf("seed %d round %d", s, round)
		for i, p := range plans {
			desc += fmt.Sprintf(" | run %d: fail %q timeout %v retry %v fail2 %q timeout2 %v", i, p.fail1, p.timeout1, p.retry, p.fail2, p.timeout2)
		}
		for i, p := range plans {
			r := p.r
			// The request is made now: its time orders the runs.
			r.ev = newRun(t, pr).ev
			own := []*event.Event{r.ev}
			d.publish(r.ev)
			if i == refusedDuring {
				d.publish(refusedRun(t, pr)...)
			}
			a1 := r.attempt(r.ev, contracts.StateValidating, p.fail1, p.timeout1)
			d.publish(a1...)
			own = append(own, a1...)
			if !p.retry {
				continue
			}
			d.until(fmt.Sprintf("run %d failed at %s", i, p.fail1), func(sg ledger.Saga) bool {
				return sg.CorrelationID == r.ev.ID() && sg.State == contracts.StateMergeFailed && sg.FailedStep == p.fail1 && sg.Attempts == 1
			}, pr, own)
			replay := f.retryReplay(pr, fmt.Sprintf("%s: retry of run %d", desc, i))
			d.publish(replay)
			d.publish(r.attempt(replay, p.fail1, p.fail2, p.timeout2)...)
		}
		for d.step() {
		}
		got, want := f.saga(pr), plans[len(plans)-1].want()
		if got.CorrelationID != want.CorrelationID || got.State != want.State || got.FailedStep != want.FailedStep ||
			got.TimedOut != want.TimedOut || got.Attempts != want.Attempts || got.Merged != want.Merged ||
			got.MergeSHA != want.MergeSHA || got.LastError != want.LastError {
			t.Fatalf("%s:\nfinal %+v\nwant  %+v\nhistory %s", desc, got, want, path(got.Transitions))
		}
		prev := contracts.State("")
		for i, tr := range got.Transitions {
			if tr.From != prev {
				t.Fatalf("%s: transition %d does not start where the last ended (%s): %s", desc, i, prev, path(got.Transitions))
			}
			prev = tr.To
		}
		for _, e := range d.delivered {
			if res := f.project(e); !res.Duplicate {
				t.Fatalf("%s: redelivered %s not a duplicate: %+v", desc, e.Type(), res)
			}
		}
		total += len(got.Transitions)
	}
	if n := len(f.outboxOf(f.db, contracts.SubjectStateChanged)); n != total {
		t.Fatalf("%d state_changed announced for %d transitions", n, total)
	}
}

// TestProjectTwoLedgersAcrossRuns projects the runs of many PRs with two
// ledgers at once — two projectors over two handles on one SQLite file,
// each handling every event 1–2 times in its own random order, a lost race
// handled again as the runner's redelivery does. Without retries (the
// operator needs a settled row), every PR has 2–3 runs and sometimes a
// refused request; the final row must be the last run's outcome.
func TestProjectTwoLedgersAcrossRuns(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	f := newFixture(t)
	_, a, b := twoLedgers(t)
	stores := []*ledger.Store{a, b}
	prs := 20
	if testing.Short() {
		prs = 6
	}
	var all []*event.Event
	wants := map[string]ledger.Saga{}
	for n := range prs {
		pr := contracts.PRID("acme/two", n+1)
		plans := randomPlans(t, rng, pr)
		refusedDuring := rng.IntN(len(plans) + 1)
		for i := range plans {
			p := &plans[i]
			p.retry, p.fail2, p.timeout2 = false, "", false
			if i < len(plans)-1 {
				p.timeout1 = false
			}
			p.r.ev = newRun(t, pr).ev
			all = append(all, p.r.ev)
			if i == refusedDuring {
				all = append(all, refusedRun(t, pr)...)
			}
			all = append(all, p.r.attempt(p.r.ev, contracts.StateValidating, p.fail1, p.timeout1)...)
		}
		wants[pr] = plans[len(plans)-1].want()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, st := range stores {
		order := shuffled(rand.New(rand.NewPCG(s+uint64(i), 7)), all)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range order {
				for {
					_, err := f.tryProject(st, e)
					if errors.Is(err, ledger.ErrConflict) {
						continue // the runner redelivers; the fresh row decides
					}
					if err != nil {
						errs <- fmt.Errorf("ledger %d: project %s %s: %w", i, e.Type(), e.ID(), err)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	f.store = stores[0]
	for pr, want := range wants {
		got := f.saga(pr)
		if got.CorrelationID != want.CorrelationID || got.State != want.State || got.FailedStep != want.FailedStep ||
			got.TimedOut != want.TimedOut || got.Attempts != want.Attempts || got.Merged != want.Merged || got.MergeSHA != want.MergeSHA {
			t.Errorf("seed %d %s:\nfinal %+v\nwant  %+v\nhistory %s", s, pr, got, want, pathOf(got.Transitions))
		}
	}
}

func pathOf(ts []ledger.Transition) string { return path(ts) }
