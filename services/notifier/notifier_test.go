package notifier_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	pstore "github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/notifier"
)

// store is a fake notifier.Store.
type store struct {
	watchers      []notifier.Watcher
	done          map[string]notifier.Delivery
	deliveryReads atomic.Int32
}

func (s *store) Watchers(context.Context, string) ([]notifier.Watcher, error) { return s.watchers, nil }
func (s *store) Deliveries(context.Context, string) (map[string]notifier.Delivery, error) {
	s.deliveryReads.Add(1)
	return s.done, nil
}
func (s *store) Bind(tx pstore.Tx) (notifier.Tx, error) { return storeTx{tx}, nil }

// storeTx is a notifier.Tx that keeps no rows; events go to the outbox.
type storeTx struct{ pstore.Tx }

func (storeTx) DeleteWatchers(string) error                         { return nil }
func (storeTx) PutWatchers(string, []notifier.Watcher) error        { return nil }
func (storeTx) Delivered(string, []string) (map[string]bool, error) { return nil, nil }
func (storeTx) PutDeliveries([]notifier.Delivery) error             { return nil }

type sender func(ctx context.Context, url string) (int, error)

func (f sender) Send(ctx context.Context, w notifier.Watcher, _ string, _ []byte) (int, error) {
	return f(ctx, w.URL)
}

func merged(t *testing.T) contracts.Envelope {
	t.Helper()
	req := contracts.Request{PRID: "acme/widgets#5", Repo: "acme/widgets", PRNumber: 5, SourceBranch: "f", TargetBranch: "main",
		HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", Title: "t", RequestedBy: "alice"}
	return contractstest.Envelope(t, "run1.m", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), req.PRID, time.Now(),
		contracts.Merged{Request: req, MergeSHA: "89abcdef0123456789abcdef0123456789abcdef"}, contracts.Meta{CorrelationID: "run1", Attempt: 1})
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// When the service stops mid-step (its context ends), nothing is answered
// or recorded: the event is redelivered and receivers dedupe by delivery id.
func TestOnMergedRedeliversWhenStopping(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var sent atomic.Int32
	n := &notifier.Notifier{
		Store: &store{watchers: []notifier.Watcher{{ID: "w1", URL: "https://a.example.com"}, {ID: "w2", URL: "https://b.example.com"}}},
		Sender: sender(func(ctx context.Context, _ string) (int, error) {
			sent.Add(1)
			cancel()
			<-ctx.Done()
			return 1, ctx.Err()
		}),
		Budget: time.Minute,
	}
	commit, err := n.OnMerged(ctx, merged(t), discard)
	if !errors.Is(err, context.Canceled) || commit != nil {
		t.Errorf("OnMerged = %v, %v; want context.Canceled and no commit", commit != nil, err)
	}
}

// Watchers already delivered for the run are not sent to again; a watcher
// the budget left no time for fails as "not attempted".
func TestOnMergedSendsOnlyWhatIsMissing(t *testing.T) {
	var urls []string
	block := make(chan struct{})
	defer close(block)
	n := &notifier.Notifier{
		Store: &store{
			watchers: []notifier.Watcher{{ID: "w1", URL: "https://a.example.com"}, {ID: "w2", URL: "https://b.example.com"}, {ID: "w3", URL: "https://c.example.com"}},
			done:     map[string]notifier.Delivery{"w1": {WatcherID: "w1", Delivered: true, Attempts: 2}},
		},
		Sender: sender(func(ctx context.Context, url string) (int, error) {
			urls = append(urls, url) // Parallel 1: one at a time
			<-ctx.Done()             // hangs until the budget is spent
			return 1, ctx.Err()
		}),
		Budget:   50 * time.Millisecond,
		Parallel: 1,
	}
	commit, err := n.OnMerged(t.Context(), merged(t), discard)
	if err != nil || commit == nil {
		t.Fatalf("OnMerged = %v; want an answer", err)
	}
	if len(urls) != 1 || urls[0] == "https://a.example.com" {
		t.Errorf("sent to %v; want exactly one of the two undelivered watchers (the budget ends while it hangs)", urls)
	}
	e := emitted.Answer(t, sqlitetest.Open(t), commit).Event
	var f contracts.StepFailed
	if err := contracts.Decode(e, &f); err != nil || f.Code != contracts.CodeWebhookFailed {
		t.Fatalf("answer %s %+v, %v; want step_failed webhook_failed", e.Type(), f, err)
	}
	if err := f.Validate(); err != nil {
		t.Errorf("step_failed does not validate: %v", err)
	}
	if !strings.Contains(f.Reason, "2 of 3") || !strings.Contains(f.Reason, "not attempted") ||
		!strings.Contains(f.Reason, "retry budget of 50ms is spent") || strings.Contains(f.Reason, "w1 (") {
		t.Errorf("reason %q: want w2 and w3 failed (one not attempted), the budget named, w1 not listed", f.Reason)
	}
}

// A repository without watchers is answered notified with no deliveries,
// without reading the run's delivery rows (nothing to look up) and without
// sending anything.
func TestOnMergedWithoutWatchersReadsNoDeliveries(t *testing.T) {
	st := &store{}
	n := &notifier.Notifier{
		Store: st,
		Sender: sender(func(context.Context, string) (int, error) {
			t.Error("sent to a watcher of a repository without watchers")
			return 1, nil
		}),
	}
	commit, err := n.OnMerged(t.Context(), merged(t), discard)
	if err != nil || commit == nil {
		t.Fatalf("OnMerged = %v; want an answer", err)
	}
	if got := st.deliveryReads.Load(); got != 0 {
		t.Errorf("read the run's deliveries %d times; want 0", got)
	}
	e := emitted.Answer(t, sqlitetest.Open(t), commit).Event
	var nt contracts.Notified
	if err := contracts.Decode(e, &nt); err != nil || e.Type() != contracts.TypeNotified || len(nt.Deliveries) != 0 {
		t.Errorf("answer %s %+v, %v; want notified with no deliveries", e.Type(), nt, err)
	}
}
