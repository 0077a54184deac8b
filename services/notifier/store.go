package notifier

import (
	"context"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/platform/store"
)

// Store is the notifier's tables as the handler reads them outside a
// transaction, and its view of the runner's open transaction. Safe for
// concurrent use.
type Store interface {
	// Watchers lists a repository's watchers, by id.
	Watchers(ctx context.Context, repo string) ([]Watcher, error)
	// Deliveries returns a run's delivery rows by watcher id.
	Deliveries(ctx context.Context, correlationID string) (map[string]Delivery, error)
	// Bind returns the notifier's view of an open transaction of the
	// store (the runner's); a transaction of another store is an error
	// wrapping store.ErrWrongTx.
	Bind(tx store.Tx) (Tx, error)
}

// Tx is one open write transaction of the notifier's store: its watcher
// and delivery tables and the service's outbox, committed or rolled back
// together. It is
// bound to its transaction's context and not safe for concurrent use; the
// transaction may run more than once, so callers keep side effects out.
type Tx interface {
	// DeleteWatchers deletes a repository's watchers.
	DeleteWatchers(repo string) error
	// PutWatchers writes ws as watchers of repo; their ids are distinct.
	PutWatchers(repo string, ws []Watcher) error
	// Delivered reports which of watcherIDs (at least one) already have a
	// delivered row for the run.
	Delivered(correlationID string, watcherIDs []string) (map[string]bool, error)
	// PutDeliveries writes the rows as given, replacing any row of the
	// same (correlation id, watcher id).
	PutDeliveries(ds []Delivery) error
	// Emit appends events to the outbox; the relay publishes them after commit.
	Emit(evs ...*event.Event) error
	// AfterCommit runs f once the transaction has committed.
	AfterCommit(f func())
}

// Tables is a Store with the database it binds transactions of: what the
// watchers API needs. Safe for concurrent use.
type Tables struct {
	Store
	DB store.DB
}

// ReplaceWatchers sets a repository's watchers in one transaction: those
// not in ws are removed.
func (t Tables) ReplaceWatchers(ctx context.Context, repo string, ws []Watcher) error {
	return t.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := t.Bind(stx)
		if err != nil {
			return err
		}
		if err := tx.DeleteWatchers(repo); err != nil {
			return fmt.Errorf("replace watchers: %w", err)
		}
		if err := tx.PutWatchers(repo, ws); err != nil {
			return fmt.Errorf("replace watchers: %w", err)
		}
		return nil
	})
}

// RecordDeliveries upserts delivery rows in tx. A delivered row stays
// delivered: a late repeat of a failure (a replay racing a retry) must not
// make a watcher be sent to again. ds is left as given.
func RecordDeliveries(tx Tx, ds []Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	byRun := map[string][]string{}
	var runs []string
	for _, d := range ds {
		if _, ok := byRun[d.CorrelationID]; !ok {
			runs = append(runs, d.CorrelationID)
		}
		byRun[d.CorrelationID] = append(byRun[d.CorrelationID], d.WatcherID)
	}
	delivered := map[[2]string]bool{}
	for _, corr := range runs {
		ids, err := tx.Delivered(corr, byRun[corr])
		if err != nil {
			return fmt.Errorf("record delivery: %w", err)
		}
		for id, ok := range ids {
			delivered[[2]string{corr, id}] = ok
		}
	}
	rows := make([]Delivery, len(ds))
	for i, d := range ds {
		rows[i] = d
		rows[i].Delivered = d.Delivered || delivered[[2]string{d.CorrelationID, d.WatcherID}]
	}
	if err := tx.PutDeliveries(rows); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	return nil
}
