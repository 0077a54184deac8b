package ledger_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

const (
	headSHA  = "1111111111111111111111111111111111111111"
	baseSHA  = "2222222222222222222222222222222222222222"
	mergeSHA = "3333333333333333333333333333333333333333"
)

// clock ticks one millisecond per reading, so that every write has its own time.
type clock struct{ n atomic.Int64 }

func (c *clock) Now() time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

// streamEpoch is when this test process started making events.
var streamEpoch = time.Now()

// storedAt is when the fixture's stream stored e, whatever order a test
// delivers it in: in the order the test made the events, an hour before
// the fixture's clock starts (a stream time is never after the ledger's).
func storedAt(e *event.Event) time.Time {
	return time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC).Add(e.Time().Sub(streamEpoch))
}

func request(pr string) contracts.Request {
	repo, n, err := contracts.ParsePRID(pr)
	if err != nil {
		panic(err)
	}
	return contracts.Request{
		PRID: pr, Repo: repo, PRNumber: n,
		SourceBranch: "feature/x", TargetBranch: "main", HeadSHA: headSHA,
		Strategy: contracts.StrategyMerge, Title: "Add widgets", RequestedBy: "alice",
	}
}

// run builds the events of one saga run of a PR.
type run struct {
	t   testing.TB
	req contracts.Request
	ev  *event.Event // the requested event
}

func newRun(t testing.TB, pr string) *run {
	t.Helper()
	r := &run{t: t, req: request(pr)}
	e, err := contracts.NewRequested(step.NewID(), "https://forge.test/acme", time.Now(), r.req, "ref-1")
	if err != nil {
		t.Fatalf("requested: %v", err)
	}
	r.ev = e
	return r
}

func (r *run) follow(cause *event.Event, typ, service string, payload any) *event.Event {
	r.t.Helper()
	e, err := contracts.Follow(cause, step.NewID(), typ, service, time.Now(), payload)
	if err != nil {
		r.t.Fatalf("follow %s: %v", typ, err)
	}
	return e
}

func (r *run) validated() *event.Event {
	return r.follow(r.ev, contracts.TypeMergeValidated, contracts.ServiceValidator,
		contracts.Validated{Request: r.req, BaseSHA: baseSHA, Checks: []contracts.Check{{Context: "ci", State: "success"}}})
}

func (r *run) merged() *event.Event {
	return r.follow(r.ev, contracts.TypeMerged, contracts.ServiceMerger,
		contracts.Merged{Request: r.req, BaseSHA: baseSHA, MergeSHA: mergeSHA, ChangedPaths: []string{"a.go"}})
}

func (r *run) notified() *event.Event {
	return r.follow(r.ev, contracts.TypeNotified, contracts.ServiceNotifier,
		contracts.Notified{Request: r.req, MergeSHA: mergeSHA, Deliveries: []contracts.Delivery{{WatcherID: "w1", Status: "delivered", Attempts: 1}}})
}

func (r *run) indexed() *event.Event {
	return r.follow(r.ev, contracts.TypeIndexed, contracts.ServiceIndexer,
		contracts.Indexed{Request: r.req, MergeSHA: mergeSHA, Documents: 2})
}

func (r *run) failed(step contracts.State, service, code string) *event.Event {
	return r.follow(r.ev, contracts.TypeStepFailed, service,
		contracts.StepFailed{Request: r.req, Step: step, Code: code, Reason: "it broke", Retryable: true})
}

// happy lists the five events of a clean run, in order.
func (r *run) happy() []*event.Event {
	return []*event.Event{r.ev, r.validated(), r.merged(), r.notified(), r.indexed()}
}

// timedOut is the watchdog's event for st at an attempt of the run.
func (r *run) timedOut(st contracts.State, cause *event.Event, attempt int) *event.Event {
	r.t.Helper()
	e, err := contracts.New("to-"+step.NewID(), contracts.TypeTimedOut, contracts.SourceLedger, r.req.PRID, time.Now(),
		contracts.TimedOut{Request: r.req, Step: st, LastEventID: cause.ID(), Diagnosis: "stuck"},
		contracts.Meta{CorrelationID: r.ev.ID(), CausationID: cause.ID(), Attempt: attempt})
	if err != nil {
		r.t.Fatal(err)
	}
	return e
}

// env opens an event as the runner does.
func env(t testing.TB, e *event.Event) contracts.Envelope {
	t.Helper()
	en, err := contracts.Open(e)
	if err != nil {
		t.Fatalf("open %s: %v", e.Type(), err)
	}
	return en
}

// fixture is a projector over a real SQLite ledger database.
type fixture struct {
	t     testing.TB
	db    *psqlite.DB
	store *ledger.Store
	proj  *ledger.Projector
	logs  *logtest.Buffer
	log   *slog.Logger
}

func newFixture(t testing.TB) *fixture {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	c := &clock{}
	logs := &logtest.Buffer{}
	return &fixture{
		t: t, db: db, store: ledgersqlite.NewStore(db),
		proj: &ledger.Projector{Now: c.Now},
		logs: logs,
		log:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// project applies one event in its own transaction, as the runner does.
func (f *fixture) project(e *event.Event) ledger.Result {
	f.t.Helper()
	res, err := f.tryProject(f.store, e)
	if err != nil {
		f.t.Fatalf("project %s %s: %v", e.Type(), e.ID(), err)
	}
	return res
}

func (f *fixture) tryProject(store *ledger.Store, e *event.Event) (ledger.Result, error) {
	return f.tryProjectStored(store, e, storedAt(e))
}

// tryProjectStored projects e as delivered from the stream, stored at at.
func (f *fixture) tryProjectStored(store *ledger.Store, e *event.Event, at time.Time) (ledger.Result, error) {
	en := env(f.t, e)
	l := &ledger.Ledger{Store: store, Proj: f.proj}
	return l.Apply(step.WithStoredAt(context.Background(), at), en, logging.ForEvent(f.log, en))
}

func (f *fixture) saga(pr string) ledger.Saga {
	f.t.Helper()
	s, err := f.store.Get(context.Background(), pr)
	if err != nil {
		f.t.Fatalf("get %s: %v", pr, err)
	}
	return s
}

func (f *fixture) events(pr string) []ledger.Event {
	f.t.Helper()
	evs, err := f.store.Events(context.Background(), pr)
	if err != nil {
		f.t.Fatalf("events %s: %v", pr, err)
	}
	return evs
}

// announced decodes the state_changed events waiting in the outbox.
func (f *fixture) announced() []contracts.Envelope {
	f.t.Helper()
	var out []contracts.Envelope
	for _, ev := range emitted.Read(f.t, f.db) {
		if ev.Row.Subject != contracts.SubjectStateChanged {
			f.t.Fatalf("outbox row on %s, want only %s", ev.Row.Subject, contracts.SubjectStateChanged)
		}
		if err := ev.Env.ValidatePayload(); err != nil {
			f.t.Fatalf("outbox row %s payload: %v", ev.Row.ID, err)
		}
		out = append(out, ev.Env)
	}
	return out
}

func path(ts []ledger.Transition) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(" ")
		}
		inf := ""
		if t.Inferred {
			inf = "*"
		}
		fmt.Fprintf(&b, "%s>%s%s", t.From, t.To, inf)
	}
	return b.String()
}
