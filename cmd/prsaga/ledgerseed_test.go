package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// A ledger database written by the ledger's own code (projection, retries,
// watchdog) the way the consumer writes it, without the other services:
// thousands of sagas in seconds, for the ledger's maintenance verbs.

const (
	seedBase  = "2222222222222222222222222222222222222222"
	seedHead  = "1111111111111111111111111111111111111111"
	seedMerge = "3333333333333333333333333333333333333333"
)

// seedKind is what happens to the i-th saga of seedLedger.
func seedKind(i int) string {
	return [...]string{"retried", "timed_out", "taken_over", "already_merged", "notifying", "out_of_order", "merged", "merged", "merged", "merged"}[i%10]
}

// seedPR is the i-th saga's PR.
func seedPR(i int) string { return fmt.Sprintf("acme/r%d#%d", i%7, i+1) }

type seeder struct {
	t   *testing.T
	ctx context.Context
	l   *ledger.Ledger
	ret *ledger.Retrier
	log *slog.Logger
}

// seedLedger writes n sagas into the ledger database of dataDir
// (<dataDir>/db/ledger.sqlite), each of seedKind(i), and closes it.
func seedLedger(t *testing.T, dataDir string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := sqlite.Open(ctx, filepath.Join(dataDir, "db", "ledger.sqlite"), sqlite.Options{}, ledgersqlite.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := ledgersqlite.NewStore(db)
	proj := &ledger.Projector{}
	s := &seeder{t: t, ctx: ctx, l: &ledger.Ledger{Store: store, Proj: proj},
		ret: &ledger.Retrier{Store: store, Proj: proj, NewID: step.NewID}, log: slog.New(slog.DiscardHandler)}
	// Sagas side by side: the store commits concurrent writes together
	// (group commit), as it does under the consumer's load.
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n && !t.Failed(); i += workers {
				s.saga(i)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The watchdog, an hour ahead: every saga still in MERGING is stuck.
	wd := &ledger.Watchdog{Store: store, Bus: quietBus{}, Proj: proj, Log: s.log,
		Now:    func() time.Time { return time.Now().Add(time.Hour) },
		Config: ledger.WatchdogConfig{Batch: n, Timeouts: ledger.Timeouts{contracts.StateMerging: time.Minute, contracts.StateNotifying: 24 * time.Hour}}}
	res, err := wd.Tick(ctx)
	if err != nil || res.Moved != (n+8)/10 {
		t.Fatalf("watchdog tick: %+v %v, want %d timed out", res, err, (n+8)/10)
	}
}

// fail fails the test from any goroutine and ends the calling one.
func (s *seeder) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf(format, args...)
	runtime.Goexit()
}

func (s *seeder) apply(e *event.Event) {
	s.t.Helper()
	env, err := contracts.Open(e)
	if err != nil {
		s.fail("open %s: %v", e.Type(), err)
	}
	if _, err := s.l.Apply(s.ctx, env, s.log); err != nil {
		s.fail("apply %s: %v", e.Type(), err)
	}
}

func (s *seeder) follow(cause *event.Event, typ, service string, payload any) *event.Event {
	s.t.Helper()
	e, err := contracts.Follow(cause, step.NewID(), typ, service, time.Now(), payload)
	if err != nil {
		s.fail("follow %s: %v", typ, err)
	}
	return e
}

func (s *seeder) saga(i int) {
	s.t.Helper()
	pr := seedPR(i)
	repo, num, _ := contracts.ParsePRID(pr)
	req := contracts.Request{PRID: pr, Repo: repo, PRNumber: num, SourceBranch: "feature/x", TargetBranch: "main",
		HeadSHA: seedHead, Strategy: contracts.StrategyMerge, Title: "Add widgets", RequestedBy: "alice"}
	start := func() *event.Event {
		e, err := contracts.NewRequested(step.NewID(), "https://forge.test/acme", time.Now(), req, "")
		if err != nil {
			s.fail("%v", err)
		}
		s.apply(e)
		return e
	}
	rq := start()
	kind := seedKind(i)
	if kind == "taken_over" {
		// The first run fails its checks; a second run takes the row over.
		s.apply(s.follow(rq, contracts.TypeStepFailed, contracts.ServiceValidator,
			contracts.StepFailed{Request: req, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "ci failed"}))
		rq = start()
	}
	val := s.follow(rq, contracts.TypeMergeValidated, contracts.ServiceValidator,
		contracts.Validated{Request: req, BaseSHA: seedBase, Checks: []contracts.Check{{Context: "ci", State: "success"}}})
	s.apply(val)
	s.apply(val) // a redelivery: a duplicate, recorded once
	if kind == "timed_out" {
		return // stuck in MERGING until the watchdog's tick
	}
	merged := s.follow(val, contracts.TypeMerged, contracts.ServiceMerger,
		contracts.Merged{Request: req, BaseSHA: seedBase, MergeSHA: seedMerge, AlreadyMerged: kind == "already_merged", ChangedPaths: []string{"a.go"}})
	s.apply(merged)
	if kind == "notifying" {
		return
	}
	cause := merged
	if kind == "retried" {
		s.apply(s.follow(merged, contracts.TypeStepFailed, contracts.ServiceNotifier,
			contracts.StepFailed{Request: req, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: "receiver down", Retryable: true}))
		ans, err := s.ret.Retry(s.ctx, ledger.RetryRequest{PRID: pr, Actor: "alice"})
		if err != nil || !ans.Accepted {
			s.fail("retry %s: %+v %v", pr, ans, err)
		}
		var replay event.Event
		if err := json.Unmarshal(ans.Replay.Event, &replay); err != nil {
			s.fail("%v", err)
		}
		s.apply(&replay) // the ledger's consumer records the replay it sent
		cause = &replay
	}
	notified := s.follow(cause, contracts.TypeNotified, contracts.ServiceNotifier,
		contracts.Notified{Request: req, MergeSHA: seedMerge, ChangedPaths: []string{"a.go"}, Deliveries: []contracts.Delivery{}})
	indexed := s.follow(notified, contracts.TypeIndexed, contracts.ServiceIndexer,
		contracts.Indexed{Request: req, MergeSHA: seedMerge, Documents: 1})
	if kind == "out_of_order" {
		s.apply(indexed) // infers NOTIFYING -> INDEXING
		s.apply(notified)
		return
	}
	s.apply(notified)
	s.apply(indexed)
}

// quietBus is a bus with nothing in flight: the watchdog's probe seam.
type quietBus struct{}

func (quietBus) Ping(context.Context) error { return nil }
func (quietBus) Backlog(context.Context, string) (ledger.Backlog, error) {
	return ledger.Backlog{}, nil
}
func (quietBus) DeadLetters(context.Context, string) (uint64, error) { return 0, nil }
