package ledger_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// fakeBus answers the watchdog's questions; ping fails while down is set.
type fakeBus struct {
	mu      sync.Mutex
	down    error
	backlog ledger.Backlog
	dlq     uint64
}

func (b *fakeBus) Ping(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.down
}

func (b *fakeBus) Backlog(context.Context, string) (ledger.Backlog, error) { return b.backlog, nil }

func (b *fakeBus) DeadLetters(context.Context, string) (uint64, error) { return b.dlq, nil }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type wdFixture struct {
	*fixture
	clock *pstoretest.Clock // set by the test
	bus   *fakeBus
}

func newWDFixture(t *testing.T) *wdFixture {
	f := newFixture(t)
	c := pstoretest.NewClock(t0)
	f.proj.Now = c.Now
	return &wdFixture{fixture: f, clock: c, bus: &fakeBus{backlog: ledger.Backlog{Pending: 3, AckPending: 1}, dlq: 1}}
}

func (f *wdFixture) watchdog(store *ledger.Store, cfg ledger.WatchdogConfig) *ledger.Watchdog {
	return &ledger.Watchdog{Config: cfg, Store: store, Bus: f.bus, Proj: f.proj, Log: f.log, Now: f.clock.Now}
}

// at projects events with the clock at t.
func (f *wdFixture) at(t time.Time, evs ...*event.Event) {
	f.clock.Set(t)
	for _, e := range evs {
		f.project(e)
	}
}

var wdConfig = ledger.WatchdogConfig{Interval: time.Second, Batch: 100, Timeouts: ledger.Timeouts{
	contracts.StateValidating: time.Minute, contracts.StateMerging: time.Minute,
	contracts.StateNotifying: 5 * time.Minute, contracts.StateIndexing: time.Minute,
}}

func (f *wdFixture) tick(w *ledger.Watchdog) ledger.TickResult {
	f.t.Helper()
	res, err := w.Tick(context.Background())
	if err != nil {
		f.t.Fatalf("tick: %v", err)
	}
	return res
}

// listStuck walks the API's stuck listing at now.
func (f *wdFixture) listStuck(now time.Time) []string {
	f.t.Helper()
	var ids []string
	filter := ledger.Filter{Stuck: true, StuckBefore: wdConfig.Timeouts.Cutoffs(now), Limit: 2}
	for {
		p, err := f.store.List(context.Background(), filter)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, s := range p.Sagas {
			ids = append(ids, s.PRID)
		}
		if p.NextCursor == "" {
			slices.Sort(ids)
			return ids
		}
		c, _ := ledger.ParseCursor(p.NextCursor)
		filter.After = &c
	}
}

func TestWatchdogTimesOutStuckRows(t *testing.T) {
	f := newWDFixture(t)
	merging, notifying, fresh, done, failed := newRun(t, "acme/a#1"), newRun(t, "acme/a#2"), newRun(t, "acme/a#3"), newRun(t, "acme/a#4"), newRun(t, "acme/a#5")
	val := merging.validated()
	f.at(t0, merging.ev, val, notifying.ev, notifying.validated(), notifying.merged())
	f.at(t0, done.happy()...)
	f.at(t0, failed.ev, failed.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed))
	f.at(t0.Add(90*time.Second), fresh.ev, fresh.validated())
	w := f.watchdog(f.store, wdConfig)

	now := t0.Add(2 * time.Minute)
	f.clock.Set(now)
	if got := f.listStuck(now); !slices.Equal(got, []string{"acme/a#1"}) {
		t.Fatalf("stuck at +2m: %v, want acme/a#1 (MERGING past its 1m timeout)", got)
	}
	if res := f.tick(w); res.Moved != 1 || res.Stuck != 1 || res.Skipped != "" {
		t.Fatalf("tick at +2m: %+v, want one row moved", res)
	}
	s := f.saga("acme/a#1")
	if s.State != contracts.StateMergeFailed || s.FailedStep != contracts.StateMerging || !s.TimedOut || !strings.HasPrefix(s.LastError, "timed_out: ") {
		t.Fatalf("stuck saga after the tick: %+v, want MERGE_FAILED at MERGING, timed out", s)
	}
	if f.saga("acme/a#3").State != contracts.StateMerging || f.saga("acme/a#2").State != contracts.StateNotifying {
		t.Fatal("the watchdog moved a row that was not stuck")
	}
	outs := f.outboxOf(f.db, contracts.SubjectTimedOut)
	if len(outs) != 1 {
		t.Fatalf("%d timed_out events in the outbox, want 1", len(outs))
	}
	to := outs[0].Payload.(*contracts.TimedOut)
	if outs[0].Meta.CorrelationID != merging.ev.ID() || outs[0].Meta.Attempt != 1 || to.Step != contracts.StateMerging ||
		to.LastEventID != val.ID() || !to.Deadline.Equal(t0.Add(time.Minute)) || to.Request.HeadSHA != headSHA {
		t.Fatalf("timed_out %+v (meta %+v): want MERGING of run %s, last event %s, deadline +1m, request carried", to, outs[0].Meta, merging.ev.ID(), val.ID())
	}
	for _, want := range []string{"trigger validated " + val.ID() + " (attempt 1) was published", "consumer merger: 3 pending, 1 delivered and not acknowledged", "prsaga.dlq.merger holds 1 messages"} {
		if !strings.Contains(to.Diagnosis, want) {
			t.Errorf("diagnosis %q lacks %q", to.Diagnosis, want)
		}
	}
	if res := f.tick(w); res.Moved != 0 {
		t.Fatalf("second tick moved %d rows, want none", res.Moved)
	}
	// The ledger's own consumer later sees the event: a duplicate.
	if res := f.project(outs[0].Event); !res.Duplicate {
		t.Fatalf("own timed_out projected again: %+v", res)
	}

	now = t0.Add(6 * time.Minute)
	f.clock.Set(now)
	want := f.listStuck(now)
	if !slices.Equal(want, []string{"acme/a#2", "acme/a#3"}) {
		t.Fatalf("stuck at +6m: %v", want)
	}
	if res := f.tick(w); res.Moved != 2 {
		t.Fatalf("tick at +6m: %+v, want the 2 listed as stuck moved", res)
	}
	if got := f.listStuck(now); len(got) != 0 {
		t.Fatalf("still stuck after the tick: %v", got)
	}
}

func TestWatchdogBatch(t *testing.T) {
	f := newWDFixture(t)
	for i := range 5 {
		r := newRun(t, contracts.PRID("acme/b", i+1))
		f.at(t0.Add(time.Duration(i)*time.Second), r.ev)
	}
	cfg := wdConfig
	cfg.Batch = 2
	w := f.watchdog(f.store, cfg)
	f.clock.Set(t0.Add(time.Hour))
	for i, want := range []int{2, 2, 1, 0} {
		if res := f.tick(w); res.Moved != want {
			t.Fatalf("tick %d moved %d, want %d", i, res.Moved, want)
		}
	}
	// Oldest first: #1 and #2 went in the first tick.
	s := f.saga("acme/b#1")
	if s.Transitions[len(s.Transitions)-1].At != t0.Add(time.Hour) {
		t.Fatalf("oldest row not moved first: %+v", s)
	}
}

func TestWatchdogSkipsWhileUnreachable(t *testing.T) {
	f := newWDFixture(t)
	r := newRun(t, pr)
	f.at(t0, r.ev)
	w := f.watchdog(f.store, wdConfig)
	f.clock.Set(t0.Add(time.Hour))

	f.bus.down = errors.New("nats: connection closed")
	if res := f.tick(w); res.Moved != 0 || !strings.Contains(res.Skipped, "bus unreachable") {
		t.Fatalf("tick with the bus down: %+v, want skipped", res)
	}
	if !strings.Contains(f.logs.String(), `"msg":"watchdog ticks skipped"`) {
		t.Errorf("no log line for the skipped tick:\n%s", f.logs.String())
	}
	f.bus.down = nil

	// The store: a second handle on a file that is gone.
	path := filepath.Join(t.TempDir(), "gone.sqlite")
	db, err := psqlite.Open(context.Background(), path, psqlite.Options{}, ledgersqlite.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if res := f.tick(f.watchdog(ledgersqlite.NewStore(db), wdConfig)); res.Moved != 0 || !strings.Contains(res.Skipped, "store unreachable") {
		t.Fatalf("tick with the store closed: %+v, want skipped", res)
	}

	if res := f.tick(w); res.Moved != 1 {
		t.Fatalf("tick after the outage: %+v, want the row moved", res)
	}
	if !strings.Contains(f.logs.String(), `"msg":"watchdog ticks resumed"`) {
		t.Errorf("no log line for the recovery")
	}
}

// A success that arrives after its step timed out heals the saga.
func TestWatchdogLateSuccessHeals(t *testing.T) {
	f := newWDFixture(t)
	r := newRun(t, pr)
	f.at(t0, r.ev, r.validated())
	f.clock.Set(t0.Add(2 * time.Minute))
	if res := f.tick(f.watchdog(f.store, wdConfig)); res.Moved != 1 {
		t.Fatalf("tick: %+v", res)
	}
	f.at(t0.Add(3*time.Minute), r.merged())
	s := f.saga(pr)
	if s.State != contracts.StateNotifying || s.TimedOut || s.FailedStep != "" || !s.Merged {
		t.Fatalf("after the late merged: %+v, want NOTIFYING", s)
	}
	if got, want := path(s.Transitions), ">VALIDATING VALIDATING>MERGING MERGING>MERGE_FAILED MERGE_FAILED>NOTIFYING"; got != want {
		t.Fatalf("history %s, want %s", got, want)
	}
}

// Two watchdogs over one database file (two ledger processes) tick at
// once: every stuck row moves once, with one timed_out event.
func TestWatchdogTwoInstancesMoveEachRowOnce(t *testing.T) {
	f := newWDFixture(t)
	dbA, a, b := twoLedgers(t)
	f.store = a
	const n = 20
	for i := range n {
		r := newRun(t, contracts.PRID("acme/c", i+1))
		f.at(t0, r.ev, r.validated())
	}
	f.clock.Set(t0.Add(time.Hour))
	results, errs := atOnce([]*ledger.Store{a, b}, func(s *ledger.Store) (ledger.TickResult, error) {
		return f.watchdog(s, wdConfig).Tick(context.Background())
	})
	moved := make([]int, 2)
	for i, res := range results {
		if errs[i] != nil {
			t.Errorf("watchdog %d: %v", i, errs[i])
		}
		moved[i] = res.Moved
	}
	if moved[0]+moved[1] != n {
		t.Fatalf("watchdogs moved %v rows, want %d in all", moved, n)
	}
	outs := f.outboxOf(dbA, contracts.SubjectTimedOut)
	seen := map[string]int{}
	for _, o := range outs {
		seen[o.Event.Subject()]++
	}
	if len(outs) != n || len(seen) != n {
		t.Fatalf("%d timed_out events over %d PRs, want one per stuck row (%d)", len(outs), len(seen), n)
	}
}

func TestWatchdogConfigNeedsTimeoutsBeyondTheDeliveryBudget(t *testing.T) {
	cfg := ledger.WatchdogConfig{Interval: time.Second, Batch: 1, DeliveryBudget: 5 * time.Minute,
		StepBudgets: map[contracts.State]time.Duration{contracts.StateNotifying: 31 * time.Second},
		Timeouts: ledger.Timeouts{contracts.StateValidating: 10 * time.Minute, contracts.StateMerging: 10 * time.Minute,
			contracts.StateNotifying: 5*time.Minute + 30*time.Second, contracts.StateIndexing: 10 * time.Minute}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "NOTIFYING") || strings.Contains(err.Error(), "MERGING") {
		t.Fatalf("Validate: %v, want NOTIFYING's timeout (5m30s < 5m + 31s) refused, and only it", err)
	}
	cfg.Timeouts[contracts.StateNotifying] = 6 * time.Minute
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := (ledger.WatchdogConfig{}).Validate(); err == nil {
		t.Fatal("zero interval and batch accepted without defaults")
	}
	if err := (ledger.WatchdogConfig{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
