package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Watcher receives a repository's merge notifications. URL and Secret are
// secrets: they never leave the notifier.
type Watcher struct {
	ID     string
	Repo   string
	URL    string
	Secret string
}

// Delivery is the outcome of notifying one watcher for one saga run.
type Delivery struct {
	CorrelationID string
	WatcherID     string
	Delivered     bool
	Attempts      int
	LastError     string
}

// Sender delivers one run's event to one watcher, signed, retrying inside
// the call until ctx ends. The same (correlationID, watcher) always carries
// the same delivery id, so a receiver drops a repeat. It must be safe for
// concurrent use.
type Sender interface {
	Send(ctx context.Context, w Watcher, correlationID string, body []byte) (attempts int, err error)
}

// DefaultParallel is how many watchers are notified at once by default.
const DefaultParallel = 16

// Delivery statuses in the notified event.
const (
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Notifier handles merged events.
type Notifier struct {
	Store  Store
	Sender Sender
	// Budget bounds the whole delivery of one event, every watcher and
	// every retry included: the step's own retry budget (design §4). A
	// watcher not delivered by then counts as failed. Zero: no bound but
	// the Sender's.
	Budget time.Duration
	// Parallel bounds the watchers notified at once; 0 means DefaultParallel.
	Parallel int
	Now      func() time.Time
}

// outcome is one watcher's result in this call.
type outcome struct {
	attempts int
	err      error
}

// OnMerged delivers the merged event to every watcher of the repository
// not yet delivered for this run (correlation id), in parallel, within
// Budget. All delivered → notified with each watcher's result; any failed →
// step_failed(NOTIFYING, webhook_failed) naming those watchers (ids, never
// URLs) and their last error, retryable: a replay delivers only to them,
// with the same X-Prsaga-Delivery id. Delivery rows are recorded either way.
// If ctx ends first (the service is stopping) nothing is recorded and the
// event is redelivered; receivers drop a repeat by its delivery id.
func (n *Notifier) OnMerged(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	m, ok := env.Payload.(*contracts.Merged)
	if !ok {
		return nil, fmt.Errorf("notifier: unexpected payload %T", env.Payload)
	}
	corr := env.Meta.CorrelationID
	watchers, err := n.Store.Watchers(ctx, m.Repo)
	if err != nil {
		return nil, err
	}
	// A repository without watchers (most of them) has nothing to look up
	// or send: its deliveries and the body are read only for watchers.
	done := map[string]Delivery{}
	var outcomes []outcome
	if len(watchers) > 0 {
		if done, err = n.Store.Deliveries(ctx, corr); err != nil {
			return nil, err
		}
		body, err := webhookBody(env.Event)
		if err != nil {
			return nil, err
		}
		outcomes = n.deliver(ctx, watchers, done, corr, body)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	results := make([]contracts.Delivery, 0, len(watchers))
	var record []Delivery
	var failed []string
	for i, w := range watchers {
		prev := done[w.ID]
		if prev.Delivered {
			results = append(results, contracts.Delivery{WatcherID: w.ID, Status: StatusDelivered, Attempts: prev.Attempts})
			continue
		}
		o := outcomes[i]
		d := Delivery{CorrelationID: corr, WatcherID: w.ID, Attempts: prev.Attempts + o.attempts, Delivered: o.err == nil}
		status := StatusDelivered
		if o.err != nil {
			d.LastError, status = o.err.Error(), StatusFailed
			failed = append(failed, fmt.Sprintf("%s (%s)", w.ID, o.err))
			log.WarnContext(ctx, "webhook delivery failed", "watcher_id", w.ID, "attempts", o.attempts, "err", o.err)
		}
		record = append(record, d)
		results = append(results, contracts.Delivery{WatcherID: w.ID, Status: status, Attempts: d.Attempts})
	}
	typ, payload := contracts.TypeNotified, any(contracts.Notified{Request: m.Request, MergeSHA: m.MergeSHA, ChangedPaths: m.ChangedPaths, Deliveries: results})
	if len(failed) > 0 {
		typ, payload = contracts.TypeStepFailed, contracts.StepFailed{
			Request: m.Request, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Retryable: true,
			Reason: contracts.FitReason(fmt.Sprintf("webhook delivery failed for %d of %d watchers: %s", len(failed), len(watchers), strings.Join(failed, "; "))),
		}
	}
	now := time.Now
	if n.Now != nil {
		now = n.Now
	}
	ev, err := contracts.Follow(env.Event, step.FollowID(contracts.ServiceNotifier, env), typ, contracts.ServiceNotifier, now(), payload)
	if err != nil {
		return nil, err
	}
	return func(stx store.Tx) error {
		tx, err := n.Store.Bind(stx)
		if err != nil {
			return err
		}
		if err := RecordDeliveries(tx, record); err != nil {
			return err
		}
		tx.AfterCommit(func() {
			log.InfoContext(ctx, "notified", "watchers", len(watchers), "sent", len(record), "failed", len(failed), "outcome", typ, "emitted_id", ev.ID())
		})
		return tx.Emit(ev)
	}, nil
}

// deliver sends body to every watcher not yet delivered, at most Parallel
// at once, all within Budget. outcomes[i] belongs to watchers[i] (zero for
// those already delivered).
func (n *Notifier) deliver(ctx context.Context, watchers []Watcher, done map[string]Delivery, corr string, body []byte) []outcome {
	sctx := ctx
	if n.Budget > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, n.Budget)
		defer cancel()
	}
	parallel := n.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	spent := func(err error) error {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the step's retry budget of %s is spent: %w", n.Budget, err)
		}
		return err
	}
	outcomes := make([]outcome, len(watchers))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, w := range watchers {
		if done[w.ID].Delivered {
			continue
		}
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-sctx.Done():
			}
			if err := sctx.Err(); err != nil {
				outcomes[i] = outcome{err: spent(fmt.Errorf("not attempted: %w", err))}
				return
			}
			attempts, err := n.Sender.Send(sctx, w, corr, body)
			outcomes[i] = outcome{attempts: attempts, err: spent(err)}
		})
	}
	wg.Wait()
	return outcomes
}

// WatcherID is stable per (repo, url): re-registering a URL keeps its id,
// so deliveries already made stay counted.
func WatcherID(repo, url string) string {
	h := sha256.Sum256([]byte(repo + "\x00" + url))
	return "w" + hex.EncodeToString(h[:])[:15]
}
