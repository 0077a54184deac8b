package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

const pr = "acme/widgets#42"

func TestProjectHappyRunEndsMergedWithFiveTransitions(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	for _, e := range r.happy() {
		if res := f.project(e); res.Status != ledger.StatusApplied {
			t.Fatalf("%s: status %q (%s), want applied", e.Type(), res.Status, res.Reason)
		}
	}
	s := f.saga(pr)
	if s.State != contracts.StateMerged || !s.Merged || s.MergeSHA != mergeSHA || s.FailedStep != "" ||
		s.Attempts != 1 || s.CorrelationID != r.ev.ID() || s.Repo != "acme/widgets" {
		t.Fatalf("saga = %+v, want MERGED, merged, merge_sha %s, attempts 1, correlation %s", s, mergeSHA, r.ev.ID())
	}
	if got, want := path(s.Transitions), ">VALIDATING VALIDATING>MERGING MERGING>NOTIFYING NOTIFYING>INDEXING INDEXING>MERGED"; got != want {
		t.Fatalf("transitions = %s, want %s", got, want)
	}
	for i, tr := range s.Transitions {
		if tr.Seq != int64(i+1) || tr.CorrelationID != r.ev.ID() || tr.EventID == "" || tr.At.IsZero() {
			t.Errorf("transition %d = %+v: want seq %d, the run's correlation id, an event id and a time", i, tr, i+1)
		}
	}
	if s.Transitions[1].Actor != "/prsaga/validator" {
		t.Errorf("actor of VALIDATING>MERGING = %q, want the validated event's source", s.Transitions[1].Actor)
	}
	evs := f.events(pr)
	if len(evs) != 5 {
		t.Fatalf("%d saga_event rows, want 5", len(evs))
	}
	for _, e := range evs {
		if e.Status != ledger.StatusApplied {
			t.Errorf("event %s %s: status %s, want applied", e.Type, e.EventID, e.Status)
		}
		var ce event.Event
		if err := json.Unmarshal(e.Event, &ce); err != nil || ce.ID() != e.EventID || ce.Subject() != pr {
			t.Errorf("event %s: stored CloudEvent does not read back (%v): %s", e.EventID, err, e.Event)
		}
	}

	ann := f.announced()
	if len(ann) != 5 {
		t.Fatalf("%d state_changed events in the outbox, want 5", len(ann))
	}
	var tos []string
	for i, a := range ann {
		sc := a.Payload.(*contracts.StateChanged)
		tos = append(tos, string(sc.ToState))
		if a.Event.Source() != contracts.SourceLedger || a.Meta.CorrelationID != r.ev.ID() || a.Meta.CausationID != s.Transitions[i].EventID {
			t.Errorf("state_changed %d: source %s correlation %s causation %s; want %s, %s, %s",
				i, a.Event.Source(), a.Meta.CorrelationID, a.Meta.CausationID, contracts.SourceLedger, r.ev.ID(), s.Transitions[i].EventID)
		}
		wantMerged := sc.ToState == contracts.StateNotifying || sc.ToState == contracts.StateIndexing || sc.ToState == contracts.StateMerged
		if sc.Merged != wantMerged || (sc.MergeSHA != "") != wantMerged {
			t.Errorf("state_changed to %s: merged=%v merge_sha=%q, want merged=%v", sc.ToState, sc.Merged, sc.MergeSHA, wantMerged)
		}
	}
	if got, want := strings.Join(tos, ","), "VALIDATING,MERGING,NOTIFYING,INDEXING,MERGED"; got != want {
		t.Errorf("announced to_states %s, want %s", got, want)
	}
}

func TestProjectFailureAtValidating(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	f.project(r.ev)
	f.project(r.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed))
	s := f.saga(pr)
	if s.State != contracts.StateMergeFailed || s.FailedStep != contracts.StateValidating || s.Merged ||
		s.LastError != "checks_failed: it broke" || s.TimedOut {
		t.Fatalf("saga = %+v, want MERGE_FAILED at VALIDATING, not merged, last_error \"checks_failed: it broke\"", s)
	}
	if got, want := path(s.Transitions), ">VALIDATING VALIDATING>MERGE_FAILED"; got != want {
		t.Fatalf("transitions = %s, want %s", got, want)
	}
	ann := f.announced()
	sc := ann[len(ann)-1].Payload.(*contracts.StateChanged)
	if sc.ToState != contracts.StateMergeFailed || sc.FailedStep != contracts.StateValidating || sc.Merged {
		t.Errorf("last state_changed = %+v, want MERGE_FAILED, failed_step VALIDATING, not merged", sc)
	}
	// A new request may start a new run after a failure before the merge.
	again := newRun(t, pr)
	if res := f.project(again.ev); res.Status != ledger.StatusApplied || res.Row.CorrelationID != again.ev.ID() {
		t.Fatalf("new request after failure: %+v, want applied to the new run", res)
	}
	if s := f.saga(pr); s.State != contracts.StateValidating || s.FailedStep != "" || s.LastError != "" || len(s.Transitions) != 3 {
		t.Fatalf("after new request: %+v, want VALIDATING with the failure cleared and 3 transitions", s)
	}
}

func TestProjectRecordsIgnoredEvents(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	f.project(r.ev)
	v := r.validated()
	f.project(v)

	// The very same event again: already recorded, nothing written.
	if res := f.project(v); !res.Duplicate {
		t.Fatalf("same event id again: %+v, want a duplicate", res)
	}
	// The same outcome in a new event of the run (a re-emitted validated).
	if res := f.project(r.validated()); res.Status != ledger.StatusIgnored || !strings.Contains(res.Reason, "does not rank above") {
		t.Fatalf("second validated: %+v, want ignored (does not rank above)", res)
	}
	// A request of another run while this one is in flight.
	other := newRun(t, pr)
	if res := f.project(other.ev); res.Status != ledger.StatusIgnored || !strings.Contains(res.Reason, "in flight") {
		t.Fatalf("other run's request: %+v, want ignored (in flight)", res)
	}
	// The validator answers it with in_progress under the new run's id.
	if res := f.project(other.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeInProgress)); res.Status != ledger.StatusIgnored || !strings.Contains(res.Reason, "event of run") {
		t.Fatalf("other run's step_failed: %+v, want ignored (event of another run)", res)
	}
	// A merged event of the other run cannot adopt the row either.
	if res := f.project(other.merged()); res.Status != ledger.StatusIgnored {
		t.Fatalf("other run's merged: %+v, want ignored", res)
	}

	s := f.saga(pr)
	if s.State != contracts.StateMerging || s.CorrelationID != r.ev.ID() || len(s.Transitions) != 2 {
		t.Fatalf("saga = %+v, want MERGING of the first run with 2 transitions", s)
	}
	var applied, ignored int
	for _, e := range f.events(pr) {
		switch e.Status {
		case ledger.StatusApplied:
			applied++
		case ledger.StatusIgnored:
			ignored++
			if e.Reason == "" {
				t.Errorf("ignored event %s has no reason", e.EventID)
			}
		}
	}
	if applied != 2 || ignored != 4 {
		t.Fatalf("saga_event: %d applied, %d ignored; want 2 and 4", applied, ignored)
	}
	if n := len(f.announced()); n != 2 {
		t.Fatalf("%d state_changed events, want 2 (ignored events announce nothing)", n)
	}
}

func TestProjectMergedBeforeValidated(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	evs := r.happy() // requested, validated, merged, notified, indexed
	f.project(evs[0])
	res := f.project(evs[2])
	if got, want := path(res.Transitions), "VALIDATING>MERGING* MERGING>NOTIFYING"; got != want {
		t.Fatalf("merged first: transitions %s, want %s", got, want)
	}
	if res := f.project(evs[1]); res.Status != ledger.StatusIgnored {
		t.Fatalf("late validated: %+v, want ignored", res)
	}
	f.project(evs[3])
	f.project(evs[4])

	inOrder := newFixture(t)
	for _, e := range evs {
		inOrder.project(e)
	}
	if got, want := comparable(f.saga(pr)), comparable(inOrder.saga(pr)); got != want {
		t.Fatalf("out of order: %+v\nin order:     %+v", got, want)
	}
	// The announcement of the inferred step before the merge says "not merged".
	for _, a := range f.announced() {
		sc := a.Payload.(*contracts.StateChanged)
		if sc.ToState == contracts.StateMerging && sc.Merged {
			t.Errorf("inferred VALIDATING>MERGING announced as merged")
		}
	}
}

// comparable is the part of a saga that must not depend on delivery order.
type sagaShape struct {
	State, FailedStep  contracts.State
	LastError, SHA     string
	Merged, TimedOut   bool
	Attempts, NumTrans int
	Correlation        string
}

func comparable(s ledger.Saga) sagaShape {
	return sagaShape{s.State, s.FailedStep, s.LastError, s.MergeSHA, s.Merged, s.TimedOut, s.Attempts, len(s.Transitions), s.CorrelationID}
}

// Every order of a run's events gives the same row, and a redelivery of
// any of them changes nothing.
func TestProjectAnyOrderSameRow(t *testing.T) {
	f := newFixture(t)
	var want *sagaShape
	for i, perm := range permutations(5) {
		id := contracts.PRID("acme/widgets", i+1)
		r := newRun(t, id)
		evs := r.happy()
		for _, j := range perm {
			f.project(evs[j])
		}
		f.project(evs[perm[i%5]]) // a redelivery, at the end
		got := comparable(f.saga(id))
		got.Correlation = "" // one run per PR here
		if want == nil {
			want = &got
			if got.State != contracts.StateMerged || got.NumTrans != 5 || !got.Merged {
				t.Fatalf("in order: %+v, want MERGED with 5 transitions", got)
			}
		}
		if got != *want {
			t.Fatalf("order %v: %+v, want %+v", perm, got, *want)
		}
	}
	if n, want := len(f.announced()), 120*5; n != want {
		t.Fatalf("%d announcements, want %d (5 per saga)", n, want)
	}
}

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Two ledgers applying the same event: one transition, one no-op.
func TestProjectConcurrentSameEvent(t *testing.T) {
	t.Run("one database", func(t *testing.T) {
		f := newFixture(t)
		concurrentSameEvent(t, f, f.store, f.store)
	})
	t.Run("two handles on one file", func(t *testing.T) {
		// Two ledger processes sharing a database file: two writer
		// connections, serialised by SQLite's lock.
		f := newFixture(t)
		_, a, b := twoLedgers(t)
		concurrentSameEvent(t, f, a, b)
		f.store = a
	})
}

func concurrentSameEvent(t *testing.T, f *fixture, a, b *ledger.Store) {
	r := newRun(t, pr)
	if _, err := f.tryProject(a, r.ev); err != nil {
		t.Fatal(err)
	}
	v := r.validated()
	results, errs := atOnce([]*ledger.Store{a, b}, func(s *ledger.Store) (ledger.Result, error) { return f.tryProject(s, v) })
	var applied, dup int
	for i := range results {
		switch {
		case errs[i] != nil:
			t.Fatalf("ledger %d: %v", i, errs[i])
		case results[i].Status == ledger.StatusApplied:
			applied++
		case results[i].Duplicate:
			dup++
		}
	}
	if applied != 1 || dup != 1 {
		t.Fatalf("results %+v: want one applied and one duplicate", results)
	}
	s, err := a.Get(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := path(s.Transitions), ">VALIDATING VALIDATING>MERGING"; got != want {
		t.Fatalf("transitions = %s, want %s", got, want)
	}
}

// The writer that read a row another writer has since moved is refused and
// succeeds when it handles the event again with the fresh row.
func TestProjectLostRaceIsRetried(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	f.project(r.ev)
	v, m := env(t, r.validated()), env(t, r.merged())
	ctx := context.Background()
	// Interleave by hand: the first writer reads, the second commits, then
	// the first writes with what it read.
	err := f.store.Update(ctx, func(tx ledger.Tx) error {
		stale := racingTx{Tx: tx, before: func() {
			// Simulate the other ledger's commit inside this transaction:
			// the row moves one version ahead of what was read.
			if _, err := f.proj.Project(ctx, tx, m, f.log); err != nil {
				t.Errorf("other writer: %v", err)
			}
		}}
		_, err := f.proj.Project(ctx, &stale, v, f.log)
		return err
	})
	if !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("stale write: err = %v, want ErrConflict", err)
	}
	if s := f.saga(pr); s.State != contracts.StateValidating || len(s.Transitions) != 1 {
		t.Fatalf("after the refused write: %+v, want VALIDATING untouched (the transaction rolled back)", s)
	}
	// Handling it again (as the runner's redelivery does) applies it.
	if res := f.project(v.Event); res.Status != ledger.StatusApplied {
		t.Fatalf("retry: %+v, want applied", res)
	}
}

// racingTx runs before just before the first SaveSaga: another writer's
// commit between this writer's read and its write.
type racingTx struct {
	ledger.Tx
	before func()
	done   bool
}

func (r *racingTx) SaveSaga(prev, next contracts.Row) error {
	if !r.done {
		r.done = true
		r.before()
	}
	return r.Tx.SaveSaga(prev, next)
}

// A request with invalid fields but a valid identity still makes a row:
// the validator answers it with invalid_request, which then applies.
func TestProjectInvalidRequestCreatesRow(t *testing.T) {
	f := newFixture(t)
	req := request(pr)
	req.HeadSHA, req.Strategy = "nope", "rebase"
	e, err := contracts.NewRequested("req-invalid-1", "https://forge.test", f.proj.Now(), req, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := env(t, e).ValidatePayload(); err == nil {
		t.Fatal("the request should be invalid for this test")
	}
	if res := f.project(e); res.Status != ledger.StatusApplied || res.Row.State != contracts.StateValidating {
		t.Fatalf("invalid request: %+v, want a VALIDATING row", res)
	}
	r := &run{t: t, req: req, ev: e}
	f.project(r.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeInvalidRequest))
	if s := f.saga(pr); s.State != contracts.StateMergeFailed || !strings.HasPrefix(s.LastError, "invalid_request") {
		t.Fatalf("after invalid_request: %+v, want MERGE_FAILED with the code", s)
	}
}

func TestProjectLogsOneLinePerTransition(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	f.project(r.ev)
	f.project(r.merged()) // VALIDATING>MERGING inferred, MERGING>NOTIFYING
	f.project(r.failed(contracts.StateNotifying, contracts.ServiceNotifier, contracts.CodeWebhookFailed))

	lines := f.logs.Find(t, "saga_transition")
	if len(lines) != 4 {
		t.Fatalf("%d saga_transition lines, want 4:\n%s", len(lines), f.logs.String())
	}
	for _, k := range []string{"pr_id", "repo", "correlation_id", "from_state", "to_state", "reason", "attempt", "failed_step", "event_id", "inferred"} {
		for i, l := range lines {
			if _, ok := l[k]; !ok {
				t.Errorf("line %d lacks %q: %v", i, k, l)
			}
		}
	}
	if l := lines[1]; l["inferred"] != true || l["to_state"] != "MERGING" || l["level"] != "INFO" {
		t.Errorf("inferred line = %v, want INFO, inferred, to MERGING", l)
	}
	if l := lines[3]; l["level"] != "WARN" || l["to_state"] != "MERGE_FAILED" || l["failed_step"] != "NOTIFYING" ||
		l["correlation_id"] != r.ev.ID() || l["pr_id"] != pr || l["repo"] != "acme/widgets" {
		t.Errorf("failure line = %v, want WARN, MERGE_FAILED at NOTIFYING with the run's ids", l)
	}
	if s := f.saga(pr); !s.Merged || s.MergeSHA != mergeSHA {
		t.Errorf("failed at NOTIFYING: %+v, want merged with the sha", s)
	}
}

// Nothing is logged for a transaction that rolls back.
func TestProjectLogsOnlyAfterCommit(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	en := env(t, r.ev)
	ctx := context.Background()
	boom := errors.New("boom")
	err := f.store.Update(ctx, func(tx ledger.Tx) error {
		if _, err := f.proj.Project(ctx, tx, en, f.log); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if strings.Contains(f.logs.String(), "saga_transition") {
		t.Fatalf("rolled-back transition was logged: %s", f.logs.String())
	}
	if _, err := f.store.Get(ctx, pr); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("get after rollback: %v, want ErrNotFound", err)
	}
}

func TestStateChangedIDIsStable(t *testing.T) {
	a := ledger.StateChangedID(pr, 3, "ev-1")
	if a != ledger.StateChangedID(pr, 3, "ev-1") {
		t.Fatal("same transition, different ids")
	}
	if a == ledger.StateChangedID(pr, 4, "ev-1") || a == ledger.StateChangedID("acme/widgets#43", 3, "ev-1") {
		t.Fatal("different transitions share an id")
	}
	if err := contracts.ValidateEventID(a); err != nil {
		t.Fatalf("id %q: %v", a, err)
	}
}

// The announcements of events with UUIDv7 ids (every service's) sort by
// the causing event's time, so that their outbox keys grow at the index's
// right edge; any other id keeps a hash-only id.
func TestStateChangedIDSortsByCauseTime(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := range 50 {
		// A UUIDv7: 48 bits of Unix milliseconds (i seconds apart), the
		// version, and random bits that fall as the time rises.
		ms := base.Add(time.Duration(i) * time.Second).UnixMilli()
		u := fmt.Sprintf("%08x-%04x-7%03x-b%03x-%012x", ms>>16, ms&0xffff, 0xfff-i, 0xfff-i, 0xffffffffffff-i)
		id := ledger.StateChangedID(fmt.Sprintf("acme/widgets#%d", 100-i), int64(100-i), u)
		if err := contracts.ValidateEventID(id); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if id <= prev {
			t.Fatalf("announcement of a later event %s sorts before the earlier one's: %q <= %q", u, id, prev)
		}
		prev = id
	}
	v4 := ledger.StateChangedID(pr, 1, "0190a5b2-4c3d-4e5f-8a6b-7c8d9e0f1a2b")
	if len(v4) != len("sc-")+32 {
		t.Fatalf("id of a non-v7 cause %q: want sc- and 32 hex digits", v4)
	}
}
