// Package storetest is the ledger's part of the store conformance suite
// (platform/store/storetest): the projection's conditional writes with one
// winner among concurrent updaters, history and event log, the list with
// filters and cursor pagination, the watchdog's stuck query, stats, and
// the operator's idempotency answers — run against every adapter.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/server"
)

// Adapter is the ledger's tables on one store.
type Adapter = pstoretest.Tables[*ledger.Store]

// Opener opens a fresh database of one store with the ledger's schema.
type Opener = pstoretest.TablesOpener[*ledger.Store]

// Suite is the ledger's part of the store conformance suite.
var Suite = pstoretest.Suite[*ledger.Store]{SQLite: server.Module.SQLite, YDB: server.Module.YDB, Adapter: server.Adapter, Run: Run}

var t0 = time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the ledger's suite on the tables open gives (see Suite).
func Run(t *testing.T, open Opener) {
	t.Run("SaveSagaIsConditional", func(t *testing.T) { testSaveSaga(t, open) })
	t.Run("ConcurrentUpdatersOneWinner", func(t *testing.T) { testOneWinner(t, open) })
	t.Run("ConcurrentProjectionsOneTransition", func(t *testing.T) { testConcurrentProjections(t, open) })
	t.Run("TransitionsAndEvents", func(t *testing.T) { testHistory(t, open) })
	t.Run("ListFiltersAndPages", func(t *testing.T) { testList(t, open) })
	t.Run("StuckQuery", func(t *testing.T) { testStuck(t, open) })
	t.Run("Stats", func(t *testing.T) { testStats(t, open) })
	t.Run("StepWindow", func(t *testing.T) { testStepWindow(t, open) })
	t.Run("RetryAnswers", func(t *testing.T) { testRetryAnswers(t, open) })
	t.Run("OutboxStatus", func(t *testing.T) { testOutboxStatus(t, open) })
	t.Run("BindOtherTx", func(t *testing.T) { pstoretest.BindOtherTx(t, open(t, pstoretest.NewClock(t0).Now).Store.Bind) })
}

// Row is an existing row of pr in state, created and updated at at.
func Row(pr string, state contracts.State, at time.Time) contracts.Row {
	repo, _, err := contracts.ParsePRID(pr)
	if err != nil {
		panic(err)
	}
	return contracts.Row{Exists: true, PRID: pr, Repo: repo, CorrelationID: "run-" + strings.NewReplacer("/", "-", "#", "-").Replace(pr),
		State: state, Attempts: 1, CreatedAt: at, UpdatedAt: at}
}

func save(ctx context.Context, s *ledger.Store, prev, next contracts.Row) error {
	return s.Update(ctx, func(tx ledger.Tx) error { return tx.SaveSaga(prev, next) })
}

func read(t *testing.T, s *ledger.Store, pr string) contracts.Row {
	t.Helper()
	var r contracts.Row
	if err := s.Update(pstoretest.Context(t), func(tx ledger.Tx) error {
		var err error
		r, err = tx.Saga(pr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func testSaveSaga(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	const pr = "acme/widgets#1"
	if r := read(t, s, pr); r.Exists {
		t.Fatalf("empty store: row %+v exists", r)
	}
	first := Row(pr, contracts.StateValidating, t0)
	if err := save(ctx, s, contracts.Row{}, first); err != nil {
		t.Fatalf("insert: %v", err)
	}
	v1 := read(t, s, pr)
	if !v1.Exists || v1.Version != 1 || v1.State != contracts.StateValidating || !v1.UpdatedAt.Equal(t0) || v1.Repo != "acme/widgets" {
		t.Fatalf("after insert: %+v, want version 1, VALIDATING at %v", v1, t0)
	}
	if err := save(ctx, s, contracts.Row{}, first); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("second insert: err = %v, want ErrConflict", err)
	}
	next := v1
	next.State, next.MergeSHA, next.Merged, next.UpdatedAt = contracts.StateNotifying, strings.Repeat("a", 40), true, t0.Add(time.Second)
	next.FailedStep, next.LastError, next.TimedOut, next.Attempts = contracts.StateMerging, "was: conflict", true, 2
	if err := save(ctx, s, v1, next); err != nil {
		t.Fatalf("update at version 1: %v", err)
	}
	v2 := read(t, s, pr)
	want := next
	want.Version = 2
	if v2 != want {
		t.Fatalf("after update:\n got %+v\nwant %+v", v2, want)
	}
	stale := v1
	stale.State = contracts.StateMergeFailed
	if err := save(ctx, s, v1, stale); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("update at stale version 1: err = %v, want ErrConflict", err)
	}
	if got := read(t, s, pr); got != v2 {
		t.Fatalf("stale update changed the row:\n got %+v\nwant %+v", got, v2)
	}
}

// testOneWinner: writers that all read version 1 race to move the row;
// exactly one conditional write wins, the others get ErrConflict.
func testOneWinner(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	const pr = "acme/widgets#2"
	if err := save(ctx, s, contracts.Row{}, Row(pr, contracts.StateMerging, t0)); err != nil {
		t.Fatal(err)
	}
	v1 := read(t, s, pr)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			next := v1
			next.State, next.LastError, next.UpdatedAt = contracts.StateMergeFailed, fmt.Sprintf("writer %d", i), t0.Add(time.Duration(i+1)*time.Second)
			errs[i] = save(ctx, s, v1, next)
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, ledger.ErrConflict):
			t.Errorf("writer %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	if got := read(t, s, pr); got.Version != 2 || got.LastError != fmt.Sprintf("writer %d", winner) {
		t.Fatalf("row %+v, want version 2 written by writer %d", got, winner)
	}
}

// testConcurrentProjections: ledger instances project the same event at
// once; one applies it, the others find it recorded (a no-op).
func testConcurrentProjections(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	a := open(t, pstoretest.NewClock(t0).Now)
	req := contracts.Request{PRID: "acme/widgets#3", Repo: "acme/widgets", PRNumber: 3, SourceBranch: "feature", TargetBranch: "main",
		HeadSHA: strings.Repeat("1", 40), Strategy: contracts.StrategyMerge, Title: "t", RequestedBy: "alice"}
	e, err := contracts.NewRequested("req-3", "https://forge.test/acme", t0, req, "")
	if err != nil {
		t.Fatal(err)
	}
	env, err := contracts.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	proj := &ledger.Projector{Now: func() time.Time { return t0 }}
	log := slog.New(slog.DiscardHandler)
	const n = 4
	results := make([]ledger.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			errs[i] = a.Store.Update(ctx, func(tx ledger.Tx) error {
				var err error
				results[i], err = proj.Project(ctx, tx, env, log)
				return err
			})
		})
	}
	wg.Wait()
	applied := 0
	for i := range results {
		switch {
		case errs[i] != nil:
			t.Errorf("projection %d: %v", i, errs[i])
		case results[i].Status == ledger.StatusApplied:
			applied++
		case !results[i].Duplicate:
			t.Errorf("projection %d: %+v, want applied or duplicate", i, results[i])
		}
	}
	if applied != 1 {
		t.Fatalf("%d projections applied the event, want exactly 1", applied)
	}
	saga, err := a.Store.Get(ctx, req.PRID)
	if err != nil || len(saga.Transitions) != 1 || saga.State != contracts.StateValidating || saga.TargetBranch != "main" {
		t.Fatalf("saga %+v, %v; want VALIDATING with one transition, target main", saga, err)
	}
	if ids := pstoretest.UnsentIDs(t, a.DB, 100); len(ids) != 1 {
		t.Errorf("announcements in the outbox: %v, want one state_changed", ids)
	}
}

func testHistory(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	const pr = "acme/widgets#4"
	if _, err := s.Get(ctx, pr); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get of an unknown PR: %v, want ErrNotFound", err)
	}
	if evs, err := s.Events(ctx, pr); err != nil || len(evs) != 0 {
		t.Fatalf("events of an unknown PR: %v, %v; want none", evs, err)
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Run of an unknown run: %v, want ErrNotFound", err)
	}
	if _, ok, err := s.LastTransition(ctx, pr); err != nil || ok {
		t.Fatalf("LastTransition of an unknown PR: %v, %v; want none", ok, err)
	}
	add := func(n int, corr string, at time.Time) []ledger.Transition {
		var out []ledger.Transition
		err := s.Update(ctx, func(tx ledger.Tx) error {
			ts := make([]ledger.Transition, n)
			for i := range ts {
				ts[i] = ledger.Transition{CorrelationID: corr, From: contracts.StateValidating, To: contracts.StateMerging,
					Reason: fmt.Sprintf("r%d", i), EventID: "e", Inferred: i == 0, Actor: "/prsaga/validator", At: at}
			}
			var err error
			out, err = tx.AddTransitions(pr, ts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := add(2, "run-1", t0); got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("first seqs %d,%d, want 1,2", got[0].Seq, got[1].Seq)
	}
	if got := add(1, "run-2", t0.Add(time.Second)); got[0].Seq != 3 {
		t.Fatalf("next seq %d, want 3", got[0].Seq)
	}
	record := func(e ledger.Event) {
		t.Helper()
		if err := s.Update(ctx, func(tx ledger.Tx) error {
			seen, err := tx.EventRecorded(e.EventID)
			if err != nil || seen {
				return fmt.Errorf("EventRecorded(%s) before recording = %v, %v", e.EventID, seen, err)
			}
			return tx.RecordEvent(e)
		}); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(id, corr, typ string, at time.Time) ledger.Event {
		return ledger.Event{EventID: id, PRID: pr, CorrelationID: corr, Type: typ, Status: ledger.StatusApplied,
			Reason: "r", ReceivedAt: at, Event: []byte(`{"specversion":"1.0","id":"` + id + `","data":{"target_branch":"main"}}`)}
	}
	record(ev("e1", "run-1", contracts.TypeMergeRequested, t0))
	record(ev("e2", "run-1", contracts.TypeMergeValidated, t0.Add(time.Second)))
	record(ev("e3", "run-1", contracts.TypeMergeRequested, t0.Add(2*time.Second)))
	record(ev("e4", "run-2", contracts.TypeMergeRequested, t0.Add(3*time.Second)))
	if err := s.Update(ctx, func(tx ledger.Tx) error {
		if seen, err := tx.EventRecorded("e1"); err != nil || !seen {
			return fmt.Errorf("EventRecorded(e1) = %v, %v; want true", seen, err)
		}
		e, ok, err := tx.LatestEvent("run-1", contracts.TypeMergeRequested)
		if err != nil || !ok || e.EventID != "e3" {
			return fmt.Errorf("LatestEvent in a transaction = %+v, %v, %v; want e3", e, ok, err)
		}
		// What the projection folds when runs compete: every run's events.
		all, err := tx.EventsOf(pr)
		if err != nil || len(all) != 4 || all[0].EventID != "e1" || all[3].EventID != "e4" || all[3].CorrelationID != "run-2" ||
			!strings.Contains(string(all[1].Event), `"e2"`) {
			return fmt.Errorf("EventsOf in a transaction = %+v, %v; want e1..e4 of both runs, oldest first", all, err)
		}
		if none, err := tx.EventsOf("acme/none#1"); err != nil || len(none) != 0 {
			return fmt.Errorf("EventsOf an unknown PR = %+v, %v; want none", none, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := s.LatestEvent(ctx, "run-1", contracts.TypeMergeRequested); err != nil || !ok || e.EventID != "e3" ||
		!e.ReceivedAt.Equal(t0.Add(2*time.Second)) || e.Status != ledger.StatusApplied || !strings.Contains(string(e.Event), `"e3"`) {
		t.Errorf("LatestEvent = %+v, %v, %v; want e3 as recorded", e, ok, err)
	}
	if _, ok, err := s.LatestEvent(ctx, "run-1", contracts.TypeMerged); err != nil || ok {
		t.Errorf("LatestEvent of an unseen type = %v, %v; want none", ok, err)
	}
	evs, err := s.Events(ctx, pr)
	if err != nil || len(evs) != 4 || evs[0].EventID != "e1" || evs[3].EventID != "e4" {
		t.Errorf("events = %+v, %v; want e1..e4 oldest first", evs, err)
	}
	run, err := s.Run(ctx, "run-1")
	if err != nil || run.PRID != pr || len(run.Transitions) != 2 || len(run.Events) != 3 || run.Events[0].EventID != "e1" {
		t.Errorf("run-1 = %+v, %v; want 2 transitions and 3 events of %s", run, err, pr)
	}
	last, ok, err := s.LastTransition(ctx, pr)
	if err != nil || !ok || last.Seq != 3 || last.CorrelationID != "run-2" || !last.At.Equal(t0.Add(time.Second)) {
		t.Errorf("LastTransition = %+v, %v, %v; want seq 3 of run-2", last, ok, err)
	}
	if err := save(ctx, s, contracts.Row{}, Row(pr, contracts.StateMerging, t0)); err != nil {
		t.Fatal(err)
	}
	saga, err := s.Get(ctx, pr)
	if err != nil || len(saga.Transitions) != 3 || saga.Transitions[0].Seq != 1 || !saga.Transitions[0].Inferred ||
		saga.Transitions[2].Reason != "r0" || saga.Transitions[1].Actor != "/prsaga/validator" {
		t.Errorf("Get = %+v, %v; want the row with its 3 transitions in order", saga, err)
	}
}

// Seed writes 120 sagas over three repos and three states (VALIDATING,
// MERGED, MERGE_FAILED), updated over 60 seconds; every third one shares
// its updated_at with its neighbour, so that ties are broken by pr_id. One
// transaction per row.
func Seed(t *testing.T, s *ledger.Store) []contracts.Row {
	t.Helper()
	var rows []contracts.Row
	states := []contracts.State{contracts.StateValidating, contracts.StateMerged, contracts.StateMergeFailed}
	for i := range 120 {
		pr := contracts.PRID(fmt.Sprintf("acme/repo%d", i%3), i+1)
		r := Row(pr, states[(i/3)%3], t0.Add(time.Duration(i/2)*time.Second))
		if err := save(pstoretest.Context(t), s, contracts.Row{}, r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

func wantOrder(rows []contracts.Row, keep func(contracts.Row) bool) []string {
	var sel []contracts.Row
	for _, r := range rows {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b contracts.Row) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.PRID, a.PRID)
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.PRID
	}
	return ids
}

func walk(t *testing.T, s *ledger.Store, f ledger.Filter) (ids []string, pages int) {
	t.Helper()
	for {
		p, err := s.List(pstoretest.Context(t), f)
		if err != nil {
			t.Fatalf("list %+v: %v", f, err)
		}
		pages++
		for _, sg := range p.Sagas {
			ids = append(ids, sg.PRID)
		}
		if p.NextCursor == "" {
			return ids, pages
		}
		if len(p.Sagas) != f.WithDefaults().Limit {
			t.Fatalf("page %d has %d sagas and a next cursor; want a full page", pages, len(p.Sagas))
		}
		c, err := ledger.ParseCursor(p.NextCursor)
		if err != nil {
			t.Fatalf("cursor %q: %v", p.NextCursor, err)
		}
		f.After = &c
		if pages > 200 {
			t.Fatal("pagination does not end")
		}
	}
}

func testList(t *testing.T, open Opener) {
	s := open(t, pstoretest.NewClock(t0).Now).Store
	rows := Seed(t, s)
	all := func(contracts.Row) bool { return true }
	cutoffs := ledger.Timeouts{}.Cutoffs(t0.Add(30 * time.Second).Add(ledger.DefaultStepTimeout))
	for _, c := range []struct {
		name  string
		f     ledger.Filter
		keep  func(contracts.Row) bool
		pages int // 0: computed from the rows listed
	}{
		{"all, one page", ledger.Filter{Limit: 500}, all, 1},
		{"all, default limit", ledger.Filter{}, all, 3},
		{"all, pages of 7", ledger.Filter{Limit: 7}, all, 18},
		{"state", ledger.Filter{State: contracts.StateMerged, Limit: 9},
			func(r contracts.Row) bool { return r.State == contracts.StateMerged }, 5},
		{"repo", ledger.Filter{Repo: "acme/repo1", Limit: 10},
			func(r contracts.Row) bool { return r.Repo == "acme/repo1" }, 4},
		{"state and repo", ledger.Filter{State: contracts.StateMergeFailed, Repo: "acme/repo2", Limit: 4},
			func(r contracts.Row) bool { return r.State == contracts.StateMergeFailed && r.Repo == "acme/repo2" }, 4},
		{"nothing", ledger.Filter{Repo: "acme/none"}, func(contracts.Row) bool { return false }, 1},
		{"stuck, pages of 4", ledger.Filter{Stuck: true, StuckBefore: cutoffs, Limit: 4},
			func(r contracts.Row) bool {
				return r.State == contracts.StateValidating && r.UpdatedAt.Before(t0.Add(30*time.Second))
			}, 0},
		{"stuck in a repo", ledger.Filter{Stuck: true, StuckBefore: cutoffs, Repo: "acme/repo0", Limit: 3},
			func(r contracts.Row) bool {
				return r.Repo == "acme/repo0" && r.State == contracts.StateValidating && r.UpdatedAt.Before(t0.Add(30*time.Second))
			}, 0},
		{"stuck in a state that is not in flight", ledger.Filter{Stuck: true, StuckBefore: cutoffs, State: contracts.StateMerged},
			func(contracts.Row) bool { return false }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, pages := walk(t, s, c.f)
			want := wantOrder(rows, c.keep)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d sagas:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
			if c.pages == 0 { // as many as it takes: every page full but the last
				c.pages = max(1, (len(want)+c.f.Limit-1)/c.f.Limit)
			}
			if pages != c.pages {
				t.Errorf("%d pages, want %d", pages, c.pages)
			}
		})
	}
	for _, f := range []ledger.Filter{{State: "DONE"}, {Repo: "../etc"}, {After: &ledger.Cursor{PRID: "x' OR 1=1 --"}}} {
		if _, err := s.List(pstoretest.Context(t), f); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("list %+v: err = %v, want ErrInvalid", f, err)
		}
	}
}

func testStuck(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	rows := Seed(t, s) // VALIDATING, MERGED, MERGE_FAILED; updated t0 .. t0+59s
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	cut := t0.Add(30 * time.Second)
	cutoffs := ledger.Timeouts{}.Cutoffs(cut.Add(ledger.DefaultStepTimeout))
	got, err := s.Stuck(ctx, cutoffs, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range rows {
		if r.State == contracts.StateValidating && r.UpdatedAt.Before(cut) {
			want = append(want, r.PRID)
		}
	}
	var ids []string
	for i, r := range got {
		ids = append(ids, r.PRID)
		if i > 0 && r.UpdatedAt.Before(got[i-1].UpdatedAt) {
			t.Fatalf("not oldest first at %d", i)
		}
		if !r.Exists || r.Version != 1 {
			t.Fatalf("stuck row %+v: want an existing row at version 1", r)
		}
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("stuck %v, want %v", sorted, want)
	}
	few, err := s.Stuck(ctx, cutoffs, 3)
	if err != nil || len(few) != 3 || few[0].PRID != got[0].PRID {
		t.Fatalf("limit 3: %d rows, %v", len(few), err)
	}
	none, err := s.Stuck(ctx, ledger.Timeouts{}.Cutoffs(t0), 10)
	if err != nil || len(none) != 0 {
		t.Fatalf("nothing older than t0: %v, %v", none, err)
	}
}

func testStats(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	rows := Seed(t, s)
	win := ledger.StepWindow{Since: t0.Add(-time.Hour), Limit: 1000}
	st, err := s.Stats(ctx, win)
	if err != nil {
		t.Fatal(err)
	}
	want := map[contracts.State]int{}
	oldest := map[contracts.State]time.Time{}
	for _, state := range contracts.States {
		want[state] = 0
	}
	for _, r := range rows {
		want[r.State]++
		if o, ok := oldest[r.State]; !ok || r.UpdatedAt.Before(o) {
			oldest[r.State] = r.UpdatedAt
		}
	}
	if st.Total != 120 || len(st.States) != len(want) {
		t.Fatalf("stats %+v, want total 120 and every state", st)
	}
	for k, v := range want {
		if st.States[k] != v {
			t.Errorf("%s: %d, want %d", k, st.States[k], v)
		}
	}
	counts, err := s.StateCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for state, o := range oldest {
		if c := counts[state]; c.Sagas != want[state] || !c.Oldest.Equal(o) {
			t.Errorf("StateCounts[%s] = %+v, want %d sagas, oldest %v", state, c, want[state], o)
		}
	}

	// Step durations: from the transition into a step to the next one; a
	// visit entered by an inferred transition, or not finished, is left out.
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := func(to contracts.State, ms int, inferred bool) ledger.Transition {
		return ledger.Transition{CorrelationID: "run-1", To: to, At: at(ms), Inferred: inferred}
	}
	for i := range 20 {
		pr := contracts.PRID("acme/s", i+1)
		err := s.Update(ctx, func(tx ledger.Tx) error {
			_, err := tx.AddTransitions(pr, []ledger.Transition{tr(contracts.StateValidating, 0, false), tr(contracts.StateMerging, i+1, false),
				tr(contracts.StateNotifying, i+1001, true), tr(contracts.StateIndexing, i+1001, false)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	settled(t, func() (problems []string) {
		st, err := s.Stats(ctx, win)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[contracts.State]ledger.StepStats{
			contracts.StateValidating: {Count: 20, P50Ms: 10, P99Ms: 20},
			contracts.StateMerging:    {Count: 20, P50Ms: 1000, P99Ms: 1000},
			contracts.StateNotifying:  {},
			contracts.StateIndexing:   {},
		} {
			if st.Steps[k] != v {
				problems = append(problems, fmt.Sprintf("step %s: %+v, want %+v", k, st.Steps[k], v))
			}
		}
		return problems
	})
}

func testRetryAnswers(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	clk := pstoretest.NewClock(t0)
	s := open(t, clk.Now).Store
	ans := ledger.RetryAnswer{PRID: "acme/widgets#5", Accepted: true, Replay: &ledger.Replay{EventID: "r1", Attempt: 2}}
	err := s.Update(ctx, func(tx ledger.Tx) error {
		if _, found, err := tx.RetryAnswer("key-1"); err != nil || found {
			return fmt.Errorf("unknown key: found=%v err=%v", found, err)
		}
		return tx.SaveRetryAnswer("key-1", ans)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx ledger.Tx) error {
		got, found, err := tx.RetryAnswer("key-1")
		if err != nil || !found || got.PRID != ans.PRID || !got.Accepted || got.Replay == nil || got.Replay.EventID != "r1" {
			return fmt.Errorf("stored answer = %+v, %v, %v; want %+v", got, found, err, ans)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(25 * time.Hour)
	err = s.Update(ctx, func(tx ledger.Tx) error {
		if _, found, err := tx.RetryAnswer("key-1"); err != nil || found {
			return fmt.Errorf("answer older than a day: found=%v err=%v; want forgotten", found, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testOutboxStatus(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	a := open(t, pstoretest.NewClock(t0).Now)
	if held, sent, err := a.Store.OutboxStatus(ctx, "x"); err != nil || held || sent {
		t.Fatalf("unknown event: held=%v sent=%v err=%v", held, sent, err)
	}
	if err := a.Store.Emit(ctx, pstoretest.Requested(t, "x")); err != nil {
		t.Fatal(err)
	}
	if held, sent, err := a.Store.OutboxStatus(ctx, "x"); err != nil || !held || sent {
		t.Fatalf("emitted event: held=%v sent=%v err=%v; want held, not sent", held, sent, err)
	}
	if err := a.DB.MarkSent(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if held, sent, err := a.Store.OutboxStatus(ctx, "x"); err != nil || !held || !sent {
		t.Fatalf("published event: held=%v sent=%v err=%v; want held and sent", held, sent, err)
	}
}
