package contracts_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// The expectations below restate design §4 on their own terms (outcome
// names, the step chain) instead of reusing the package's rank table, so
// that a wrong table cannot agree with itself.

// outcomes in rank order, as design §4 lists them.
var outcomes = []string{
	"VALIDATING", "failed(VALIDATING)", "MERGING", "failed(MERGING)",
	"NOTIFYING", "failed(NOTIFYING)", "INDEXING", "failed(INDEXING)", "MERGED",
}

// chain is the forward path of a run.
var chain = []contracts.State{
	contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying, contracts.StateIndexing, contracts.StateMerged,
}

// successTarget is where each success event leads, as an index into chain.
var successTarget = map[string]int{
	contracts.TypeMergeValidated: 1, contracts.TypeMerged: 2, contracts.TypeNotified: 3, contracts.TypeIndexed: 4,
}

func outcomeRank(s contracts.State, failed contracts.State) int {
	name := string(s)
	if s == contracts.StateMergeFailed {
		name = "failed(" + string(failed) + ")"
	}
	return slices.Index(outcomes, name)
}

// chainIndex is where a row stands on the chain: its state, or for
// MERGE_FAILED its failed step; -1 for no row.
func chainIndex(r contracts.Row) int {
	if !r.Exists {
		return -1
	}
	if r.State == contracts.StateMergeFailed {
		return slices.Index(chain, r.FailedStep)
	}
	return slices.Index(chain, r.State)
}

type want struct {
	ignored bool
	newRun  bool
	trans   []contracts.Transition // Reason is checked only where set
	row     contracts.Row
}

const (
	prID  = "acme/widgets#42"
	runA  = "run-A"
	runB  = "run-B"
	sha2  = "4444444444444444444444444444444444444444"
	oldEr = "conflict: old failure"
)

// expected computes Decide's answer from the rules of design §4.
func expected(row contracts.Row, in contracts.Incoming) want {
	ign := want{ignored: true}
	fresh := func() contracts.Row {
		return contracts.Row{Exists: true, PRID: in.Req.PRID, Repo: in.Req.Repo, CorrelationID: in.CorrelationID,
			Version: row.Version, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
	}
	// start is the row a step's answer works on: a fresh row (a new run at
	// the event's attempt) for a PR without a saga, else the row itself.
	start := func() (contracts.Row, bool) {
		if !row.Exists {
			base := fresh()
			base.Attempts = in.Attempt
			return base, true
		}
		return row, false
	}
	from := func() contracts.State {
		if !row.Exists {
			return ""
		}
		return row.State
	}
	// walk lists the transitions from the row's place on the chain up to
	// chain[to], all inferred; a missing row starts at "" -> VALIDATING.
	walk := func(base contracts.Row, to int) []contracts.Transition {
		var ts []contracts.Transition
		f := from()
		for i := chainIndex(base) + 1; i <= to; i++ {
			ts = append(ts, contracts.Transition{From: f, To: chain[i], Inferred: true})
			f = chain[i]
		}
		return ts
	}

	switch in.Type {
	case contracts.TypeMergeRequested:
		// Runs: a new run only without a row, or after a step_failed (not a
		// timeout) at VALIDATING or MERGING, and never for the same run.
		if row.Exists && (row.CorrelationID == in.CorrelationID || row.State != contracts.StateMergeFailed || row.TimedOut ||
			(row.FailedStep != contracts.StateValidating && row.FailedStep != contracts.StateMerging)) {
			return ign
		}
		r := fresh()
		r.State, r.Attempts = contracts.StateValidating, 1
		return want{newRun: true, trans: []contracts.Transition{{From: from(), To: contracts.StateValidating}}, row: r}

	case contracts.TypeMergeValidated, contracts.TypeMerged, contracts.TypeNotified, contracts.TypeIndexed:
		t := successTarget[in.Type]
		base, newRun := start()
		if row.Exists && row.CorrelationID != in.CorrelationID {
			// Only validated adopts a row of another run, and only while the
			// row has not passed VALIDATING.
			if in.Type != contracts.TypeMergeValidated || outcomeRank(row.State, row.FailedStep) > slices.Index(outcomes, "failed(VALIDATING)") {
				return ign
			}
			base.CorrelationID, base.Attempts, newRun = in.CorrelationID, in.Attempt, true
		}
		if row.Exists && slices.Index(outcomes, string(chain[t])) <= outcomeRank(base.State, base.FailedStep) {
			// Not above the row: ignored, unless it brings the merge sha the
			// row lacks (a failure after the merge overtook it).
			if base.MergeSHA == "" && in.MergeSHA != "" {
				r := base
				r.MergeSHA, r.Merged = in.MergeSHA, true
				return want{row: r}
			}
			return ign
		}
		ts := walk(base, t)
		ts[len(ts)-1].Inferred = false
		r := base
		r.State, r.FailedStep, r.LastError, r.TimedOut = chain[t], "", "", false
		if in.MergeSHA != "" {
			r.MergeSHA = in.MergeSHA
		}
		r.Merged = base.Merged || t >= 2
		r.Attempts = max(base.Attempts, in.Attempt)
		return want{newRun: newRun, trans: ts, row: r}

	case contracts.TypeStepFailed, contracts.TypeTimedOut:
		f := slices.Index(chain[:4], in.Step)
		if f < 0 {
			return ign
		}
		base, newRun := start()
		if row.Exists && row.CorrelationID != in.CorrelationID {
			return ign
		}
		if row.Exists && in.Attempt < base.Attempts {
			return ign
		}
		if row.Exists && outcomeRank(contracts.StateMergeFailed, in.Step) <= outcomeRank(base.State, base.FailedStep) {
			// Not above the row: ignored, unless the step's own failure
			// follows the watchdog's timeout of that step (it has stopped).
			if in.Type == contracts.TypeStepFailed && base.State == contracts.StateMergeFailed && base.FailedStep == in.Step && base.TimedOut {
				r := base
				r.TimedOut, r.LastError = false, in.Error
				return want{row: r}
			}
			return ign
		}
		ts := append(walk(base, f), contracts.Transition{From: in.Step, To: contracts.StateMergeFailed, Reason: in.Error})
		r := base
		r.State, r.FailedStep, r.LastError = contracts.StateMergeFailed, in.Step, in.Error
		r.TimedOut = in.Type == contracts.TypeTimedOut
		r.Merged = base.Merged || f >= 2
		r.Attempts = max(base.Attempts, in.Attempt)
		return want{newRun: newRun, trans: ts, row: r}
	}
	return ign
}

// rowVariants is every place a row can be: none, each in-flight state,
// MERGED, and MERGE_FAILED at each step by a step_failed or a timeout; rows
// past the merge both with and without a known merge sha.
func rowVariants() []contracts.Row {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	base := contracts.Row{Exists: true, PRID: prID, Repo: "acme/widgets", CorrelationID: runA, Attempts: 2,
		Version: 7, CreatedAt: created, UpdatedAt: created.Add(time.Hour)}
	var rows []contracts.Row
	add := func(r contracts.Row) {
		rows = append(rows, r)
		if r.Merged {
			r.MergeSHA = ""
			rows = append(rows, r)
		}
	}
	rows = append(rows, contracts.Row{})
	for i, s := range chain {
		r := base
		r.State = s
		if i >= 2 {
			r.Merged, r.MergeSHA = true, mergeSHA
		}
		add(r)
	}
	for i, s := range chain[:4] {
		for _, timedOut := range []bool{false, true} {
			r := base
			r.State, r.FailedStep, r.LastError, r.TimedOut = contracts.StateMergeFailed, s, oldEr, timedOut
			if i >= 2 {
				r.Merged, r.MergeSHA = true, mergeSHA
			}
			add(r)
		}
	}
	return rows
}

// incomingVariants is every kind of event: requested, each success, each
// failure at each step, of the row's run and of another, with an attempt
// lower than, equal to and higher than the rows' (2).
func incomingVariants() []contracts.Incoming {
	req := validRequest()
	var ins []contracts.Incoming
	for _, run := range []string{runA, runB} {
		ins = append(ins, contracts.Incoming{ID: "req-" + run, Type: contracts.TypeMergeRequested, CorrelationID: run, Attempt: 1, Req: req})
		for _, attempt := range []int{1, 2, 3} {
			for _, typ := range []string{contracts.TypeMergeValidated, contracts.TypeMerged, contracts.TypeNotified, contracts.TypeIndexed} {
				in := contracts.Incoming{ID: fmt.Sprintf("%s-%s-%d", typ, run, attempt), Type: typ, CorrelationID: run, Attempt: attempt, Req: req}
				if typ != contracts.TypeMergeValidated {
					in.MergeSHA = mergeSHA
				}
				ins = append(ins, in)
			}
			for _, typ := range []string{contracts.TypeStepFailed, contracts.TypeTimedOut} {
				for _, step := range chain[:4] {
					ins = append(ins, contracts.Incoming{ID: fmt.Sprintf("%s-%s-%s-%d", typ, step, run, attempt), Type: typ,
						CorrelationID: run, Attempt: attempt, Req: req, Step: step, Error: "code: " + string(step) + " failed"})
				}
			}
		}
	}
	return append(ins,
		contracts.Incoming{ID: "no-step", Type: contracts.TypeStepFailed, CorrelationID: runA, Attempt: 2, Req: req, Error: "x"},
		contracts.Incoming{ID: "step-merged", Type: contracts.TypeTimedOut, CorrelationID: runA, Attempt: 2, Req: req, Step: contracts.StateMerged},
		contracts.Incoming{ID: "changed", Type: contracts.TypeStateChanged, CorrelationID: runA, Attempt: 2, Req: req},
	)
}

func describeRow(r contracts.Row) string {
	if !r.Exists {
		return "no row"
	}
	s := fmt.Sprintf("%s run %s attempts %d", r.State, r.CorrelationID, r.Attempts)
	if r.State == contracts.StateMergeFailed {
		s += fmt.Sprintf(" at %s timedOut=%t", r.FailedStep, r.TimedOut)
	}
	if r.Merged {
		s += fmt.Sprintf(" sha=%q", r.MergeSHA)
	}
	return s
}

func describeIn(in contracts.Incoming) string {
	s := fmt.Sprintf("%s run %s attempt %d", in.Type, in.CorrelationID, in.Attempt)
	if in.Step != "" {
		s += " step " + string(in.Step)
	}
	return s
}

func TestDecideExhaustive(t *testing.T) {
	rows, ins := rowVariants(), incomingVariants()
	applied := 0
	for _, row := range rows {
		for _, in := range ins {
			got := contracts.Decide(row, in)
			w := expected(row, in)
			name := describeIn(in) + " on " + describeRow(row)
			if got.Applied() == w.ignored {
				t.Errorf("%s: Applied() = %t (ignored %q), want %t", name, got.Applied(), got.Ignored, !w.ignored)
				continue
			}
			if w.ignored {
				if len(got.Transitions) != 0 {
					t.Errorf("%s: ignored decision has transitions %+v", name, got.Transitions)
				}
				continue
			}
			applied++
			if got.NewRun != w.newRun {
				t.Errorf("%s: NewRun = %t, want %t", name, got.NewRun, w.newRun)
			}
			if got.Row != w.row {
				t.Errorf("%s: row\n got %+v\nwant %+v", name, got.Row, w.row)
			}
			if len(got.Transitions) != len(w.trans) {
				t.Errorf("%s: transitions %+v, want %+v", name, got.Transitions, w.trans)
				continue
			}
			real := 0
			for i, tr := range got.Transitions {
				wt := w.trans[i]
				if tr.From != wt.From || tr.To != wt.To || tr.Inferred != wt.Inferred || (wt.Reason != "" && tr.Reason != wt.Reason) {
					t.Errorf("%s: transition %d = %+v, want %+v", name, i, tr, wt)
				}
				if tr.Reason == "" {
					t.Errorf("%s: transition %d has no reason", name, i)
				}
				if !tr.Inferred {
					real++
				}
			}
			if len(got.Transitions) > 0 && real != 1 {
				t.Errorf("%s: %d non-inferred transitions, want exactly 1 (the event's own outcome)", name, real)
			}
		}
	}
	if applied == 0 {
		t.Fatalf("no decision applied: the table tests nothing")
	}
	t.Logf("%d rows × %d events, %d applied", len(rows), len(ins), applied)
}

func TestDecideKeepsAKnownMergeSHA(t *testing.T) {
	row := contracts.Row{Exists: true, PRID: prID, CorrelationID: runA, State: contracts.StateMergeFailed,
		FailedStep: contracts.StateIndexing, Merged: true, MergeSHA: mergeSHA, Attempts: 1}
	in := contracts.Incoming{ID: "m", Type: contracts.TypeMerged, CorrelationID: runA, Attempt: 1, Req: validRequest(), MergeSHA: sha2}
	if d := contracts.Decide(row, in); d.Applied() {
		t.Errorf("merged with another sha on a row that knows %s: applied %+v, want ignored", mergeSHA, d)
	}
}

func TestRetry(t *testing.T) {
	for _, row := range rowVariants() {
		d, err := contracts.Retry(row)
		name := describeRow(row)
		if row.State != contracts.StateMergeFailed {
			if err == nil {
				t.Errorf("Retry(%s) = %+v, want an error", name, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("Retry(%s) = %v, want nil", name, err)
			continue
		}
		w := row
		w.State, w.FailedStep, w.LastError, w.TimedOut, w.Attempts = row.FailedStep, "", "", false, row.Attempts+1
		if d.Row != w {
			t.Errorf("Retry(%s) row\n got %+v\nwant %+v", name, d.Row, w)
		}
		wt := []contracts.Transition{{From: contracts.StateMergeFailed, To: row.FailedStep}}
		if len(d.Transitions) != 1 || d.Transitions[0].From != wt[0].From || d.Transitions[0].To != wt[0].To ||
			d.Transitions[0].Inferred || d.Transitions[0].Reason == "" {
			t.Errorf("Retry(%s) transitions %+v, want %+v with a reason", name, d.Transitions, wt)
		}
		if !d.Applied() || d.NewRun {
			t.Errorf("Retry(%s): Applied %t NewRun %t, want true, false", name, d.Applied(), d.NewRun)
		}
		// The retried step's events apply again: a failure of the new attempt
		// fails the saga, one of the old attempt is stale.
		for _, attempt := range []int{row.Attempts, row.Attempts + 1} {
			in := contracts.Incoming{ID: "f", Type: contracts.TypeStepFailed, CorrelationID: row.CorrelationID,
				Attempt: attempt, Req: validRequest(), Step: row.FailedStep, Error: "x: y"}
			if got, want := contracts.Decide(d.Row, in).Applied(), attempt > row.Attempts; got != want {
				t.Errorf("after Retry(%s), failure of attempt %d applied = %t, want %t", name, attempt, got, want)
			}
		}
	}
	broken := contracts.Row{Exists: true, PRID: prID, CorrelationID: runA, State: contracts.StateMergeFailed, Attempts: 1}
	if d, err := contracts.Retry(broken); err == nil {
		t.Errorf("Retry(MERGE_FAILED without a failed step) = %+v, want an error", d)
	}
}

var seed = flag.Uint64("seed", 0, "seed of the state machine property test (0: from the clock)")

// runEvents builds a real run's events through New/Follow/Open/IncomingOf.
type runEvents struct {
	requested, validated, merged, notified, indexed contracts.Incoming
	failed, timedOut                                map[contracts.State]contracts.Incoming
}

func buildRun(t *testing.T) runEvents {
	t.Helper()
	r := validRequest()
	open := func(e *event.Event, err error) (*event.Event, contracts.Incoming) {
		t.Helper()
		if err != nil {
			t.Fatalf("build event: %v", err)
		}
		env, err := contracts.Open(e)
		if err != nil {
			t.Fatalf("Open(%s): %v", e.Type(), err)
		}
		in := contracts.IncomingOf(env)
		in.Time = e.Time() // as if the bus stored each when it was made
		return e, in
	}
	reqE, req := open(contracts.NewRequested(requestID, clientSource, at, r, ""))
	valE, val := open(contracts.Follow(reqE, "validated-1", contracts.TypeMergeValidated, contracts.ServiceValidator, at, contracts.Validated{Request: r, BaseSHA: baseSHA}))
	merE, mer := open(contracts.Follow(valE, "merged-1", contracts.TypeMerged, contracts.ServiceMerger, at, contracts.Merged{Request: r, BaseSHA: baseSHA, MergeSHA: mergeSHA}))
	notE, not := open(contracts.Follow(merE, "notified-1", contracts.TypeNotified, contracts.ServiceNotifier, at, contracts.Notified{Request: r, MergeSHA: mergeSHA}))
	_, idx := open(contracts.Follow(notE, "indexed-1", contracts.TypeIndexed, contracts.ServiceIndexer, at, contracts.Indexed{Request: r, MergeSHA: mergeSHA}))
	run := runEvents{requested: req, validated: val, merged: mer, notified: not, indexed: idx,
		failed: map[contracts.State]contracts.Incoming{}, timedOut: map[contracts.State]contracts.Incoming{}}
	trigger := map[contracts.State]*event.Event{contracts.StateValidating: reqE, contracts.StateMerging: valE, contracts.StateNotifying: merE, contracts.StateIndexing: notE}
	service := map[contracts.State]string{contracts.StateValidating: contracts.ServiceValidator, contracts.StateMerging: contracts.ServiceMerger,
		contracts.StateNotifying: contracts.ServiceNotifier, contracts.StateIndexing: contracts.ServiceIndexer}
	for step, cause := range trigger {
		_, run.failed[step] = open(contracts.Follow(cause, "failed-"+string(step), contracts.TypeStepFailed, service[step], at,
			contracts.StepFailed{Request: r, Step: step, Code: "some_code", Reason: "it broke", Retryable: true}))
		_, run.timedOut[step] = open(contracts.Follow(cause, "timeout-"+string(step), contracts.TypeTimedOut, contracts.ServiceLedger, at,
			contracts.TimedOut{Request: r, Step: step, Deadline: at, LastEventID: cause.ID(), Diagnosis: "pending"}))
	}
	return run
}

// TestDecideOrderDoesNotMatter applies a real run's events, shuffled and
// duplicated, through Decide the way the ledger does, and checks that the
// final row and the shape of the history do not depend on the order.
func TestDecideOrderDoesNotMatter(t *testing.T) {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))

	run := buildRun(t)
	upTo := func(step contracts.State) []contracts.Incoming {
		all := []contracts.Incoming{run.requested, run.validated, run.merged, run.notified}
		return all[:slices.Index(chain, step)+1] // the events before the step, and its trigger
	}
	success := map[contracts.State]contracts.Incoming{contracts.StateValidating: run.validated, contracts.StateMerging: run.merged,
		contracts.StateNotifying: run.notified, contracts.StateIndexing: run.indexed}
	happy := []contracts.Incoming{run.requested, run.validated, run.merged, run.notified, run.indexed}

	type scenario struct {
		name       string
		events     []contracts.Incoming
		state      contracts.State
		failedStep contracts.State
		timedOut   bool
	}
	scenarios := []scenario{{name: "happy run", events: happy, state: contracts.StateMerged}}
	for _, step := range chain[:4] {
		next := chain[slices.Index(chain, step)+1]
		scenarios = append(scenarios,
			scenario{name: "step_failed at " + string(step), events: append(upTo(step), run.failed[step]),
				state: contracts.StateMergeFailed, failedStep: step},
			scenario{name: "timed_out at " + string(step), events: append(upTo(step), run.timedOut[step]),
				state: contracts.StateMergeFailed, failedStep: step, timedOut: true},
			scenario{name: "timed_out and step_failed at " + string(step), events: append(upTo(step), run.timedOut[step], run.failed[step]),
				state: contracts.StateMergeFailed, failedStep: step},
			scenario{name: "timed_out then late success at " + string(step), events: append(upTo(step), run.timedOut[step], success[step]),
				state: next},
			scenario{name: "happy run and a stale timed_out at " + string(step), events: append(slices.Clone(happy), run.timedOut[step]),
				state: contracts.StateMerged},
		)
	}

	const rounds = 300
	for _, sc := range scenarios {
		final := chainIndex(contracts.Row{Exists: true, State: sc.state, FailedStep: sc.failedStep})
		wantRow := contracts.Row{Exists: true, PRID: prID, Repo: "acme/widgets", CorrelationID: requestID, State: sc.state,
			FailedStep: sc.failedStep, TimedOut: sc.timedOut, Attempts: 1}
		if sc.state == contracts.StateMergeFailed {
			wantRow.LastError = "some_code: it broke"
			if sc.timedOut {
				wantRow.LastError = "timed_out: pending"
			}
		}
		if final >= 2 {
			wantRow.Merged, wantRow.MergeSHA = true, mergeSHA
		}

		for round := 0; round < rounds; round++ {
			var events []contracts.Incoming
			for _, e := range sc.events {
				for n := 1 + rng.IntN(3); n > 0; n-- {
					events = append(events, e)
				}
			}
			rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
			order := make([]string, len(events))
			for i, e := range events {
				order[i] = e.ID
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Errorf("%s, seed %d, order %v: %s", sc.name, s, order, fmt.Sprintf(format, args...))
			}

			var row contracts.Row
			var history []contracts.Transition
			failures := 0
			for _, e := range events {
				d := contracts.Decide(row, e)
				if !d.Applied() {
					continue
				}
				if (e.Type == contracts.TypeStepFailed || e.Type == contracts.TypeTimedOut) && len(d.Transitions) > 0 {
					failures++
				}
				real := 0
				for _, tr := range d.Transitions {
					if !tr.Inferred {
						real++
					}
				}
				if len(d.Transitions) > 0 && real != 1 {
					fail("%s applied with %d non-inferred transitions %+v, want 1", e.ID, real, d.Transitions)
				}
				history = append(history, d.Transitions...)
				row = d.Row
			}

			if row != wantRow {
				fail("final row\n got %+v\nwant %+v", row, wantRow)
			}
			// The history is one unbroken path from no row to the final
			// state: every step of the chain up to the final place, plus one
			// detour through MERGE_FAILED per failure that applied.
			for i, tr := range history {
				prev := contracts.State("")
				if i > 0 {
					prev = history[i-1].To
				}
				if tr.From != prev {
					fail("transition %d %+v does not start where the previous ended (%q): history %+v", i, tr, prev, history)
					break
				}
			}
			if n := len(history); n == 0 || history[n-1].To != sc.state {
				fail("history %+v does not end in %s", history, sc.state)
			}
			wantLen := final + 1 + failures
			if sc.state == contracts.StateMergeFailed {
				wantLen = final + 1 + 1 // the failure is the last outcome: it always applies, once
				if failures != 1 {
					fail("%d failures moved the row, want 1", failures)
				}
			}
			if len(history) != wantLen {
				fail("%d transitions %+v, want %d", len(history), history, wantLen)
			}
			if sc.name == "happy run" && len(history) != 5 {
				fail("happy run: %d transitions, want 5", len(history))
			}

			// Idempotence: every event again changes nothing.
			for _, e := range sc.events {
				if d := contracts.Decide(row, e); d.Applied() {
					fail("redelivered %s applied again on the final row: %+v", e.ID, d)
				}
			}
		}
	}
}
