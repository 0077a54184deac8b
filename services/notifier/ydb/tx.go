package ydb

import (
	"fmt"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/notifier"
)

// Tx is a notifier.Tx over an open transaction of the YDB store (the
// runner's), so that delivery rows commit with the inbox and the outbox.
type Tx struct {
	*pydb.Tx // Emit and AfterCommit as they are
}

var _ notifier.Tx = (*Tx)(nil)

// Bind returns the notifier's view of an open transaction of the YDB store;
// a transaction of another store is an error wrapping store.ErrWrongTx.
func (s *Store) Bind(tx store.Tx) (notifier.Tx, error) {
	t, err := pydb.TxOf(tx)
	if err != nil {
		return nil, err
	}
	return &Tx{t}, nil
}

// DeleteWatchers deletes a repository's watchers.
func (t *Tx) DeleteWatchers(repo string) error {
	if err := t.Exec(qDeleteWatchers, repoParams(repo)); err != nil {
		return fmt.Errorf("delete watchers: %w", err)
	}
	return nil
}

// PutWatchers writes ws as watchers of repo.
func (t *Tx) PutWatchers(repo string, ws []notifier.Watcher) error {
	if len(ws) == 0 {
		return nil
	}
	if err := t.Exec(qPutWatchers, putWatchersParams(repo, ws, t.Now())); err != nil {
		return fmt.Errorf("put watchers: %w", err)
	}
	return nil
}

// Delivered reports which of watcherIDs have a delivered row for the run.
func (t *Tx) Delivered(correlationID string, watcherIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	err := t.Query(qDelivered, deliveredParams(correlationID, watcherIDs), func(row query.Row) error {
		id, err := scanWatcherID(row)
		if err != nil {
			return err
		}
		out[id] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delivered: %w", err)
	}
	return out, nil
}

// PutDeliveries writes delivery rows as given.
func (t *Tx) PutDeliveries(ds []notifier.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	if err := t.Exec(qPutDeliveries, putDeliveriesParams(ds, t.Now())); err != nil {
		return fmt.Errorf("put deliveries: %w", err)
	}
	return nil
}
