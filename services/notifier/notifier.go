package notifier

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/notifier/webhook"
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

// Store reads watchers and past deliveries and records new deliveries.
type Store interface {
	Watchers(ctx context.Context, repo string) ([]Watcher, error)
	Deliveries(ctx context.Context, correlationID string) (map[string]Delivery, error)
	RecordDeliveries(tx *sqlite.Tx, ds []Delivery) error
}

// Sender posts one signed webhook, retrying inside the call.
type Sender interface {
	Send(ctx context.Context, url, secret, deliveryID string, body []byte) (attempts int, err error)
}

// Notifier handles merged events.
type Notifier struct {
	Store  Store
	Sender Sender
	Now    func() time.Time
}

// OnMerged delivers to every watcher not yet delivered for this run.
func (n *Notifier) OnMerged(ctx context.Context, env contracts.Envelope, log *slog.Logger) (runner.Commit, error) {
	m, ok := env.Payload.(*contracts.Merged)
	if !ok {
		return nil, fmt.Errorf("notifier: unexpected payload %T", env.Payload)
	}
	corr := env.Meta.CorrelationID
	watchers, err := n.Store.Watchers(ctx, m.Repo)
	if err != nil {
		return nil, err
	}
	done, err := n.Store.Deliveries(ctx, corr)
	if err != nil {
		return nil, err
	}
	body, err := format.JSON.Marshal(env.Event)
	if err != nil {
		return nil, fmt.Errorf("encode merged event: %w", err)
	}
	var results []contracts.Delivery
	var record []Delivery
	var failed []string
	for _, w := range watchers {
		prev := done[w.ID]
		if prev.Delivered {
			results = append(results, contracts.Delivery{WatcherID: w.ID, Status: "delivered", Attempts: prev.Attempts})
			continue
		}
		attempts, err := n.Sender.Send(ctx, w.URL, w.Secret, webhook.DeliveryID(corr, w.ID), body)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d := Delivery{CorrelationID: corr, WatcherID: w.ID, Attempts: prev.Attempts + attempts, Delivered: err == nil}
		status := "delivered"
		if err != nil {
			d.LastError, status = err.Error(), "failed"
			failed = append(failed, fmt.Sprintf("%s (%s)", w.ID, err))
			log.WarnContext(ctx, "webhook delivery failed", "watcher_id", w.ID, "attempts", attempts, "err", err)
		}
		record = append(record, d)
		results = append(results, contracts.Delivery{WatcherID: w.ID, Status: status, Attempts: d.Attempts})
	}
	var out = func() (any, string) {
		if len(failed) > 0 {
			reason := "webhook delivery failed for " + strings.Join(failed, "; ")
			if len(reason) > contracts.MaxReason {
				reason = reason[:contracts.MaxReason]
			}
			return contracts.StepFailed{Request: m.Request, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: reason, Retryable: true}, contracts.TypeStepFailed
		}
		return contracts.Notified{Request: m.Request, MergeSHA: m.MergeSHA, ChangedPaths: m.ChangedPaths, Deliveries: results}, contracts.TypeNotified
	}
	payload, typ := out()
	ev, err := contracts.Follow(env.Event, runner.NewID(), typ, contracts.ServiceNotifier, n.Now(), payload)
	if err != nil {
		return nil, err
	}
	return func(tx *sqlite.Tx) error {
		if err := n.Store.RecordDeliveries(tx, record); err != nil {
			return err
		}
		tx.AfterCommit(func() {
			log.InfoContext(ctx, "notified", "watchers", len(watchers), "failed", len(failed), "outcome", typ)
		})
		return tx.Emit(ev)
	}, nil
}
