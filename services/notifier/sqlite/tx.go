package sqlite

import (
	"encoding/json"
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/notifier"
)

// Tx is a notifier.Tx over an open transaction of the SQLite store (the
// runner's), so that delivery rows commit with the inbox and the outbox.
type Tx struct {
	*psqlite.Tx // Emit and AfterCommit as they are
}

var _ notifier.Tx = (*Tx)(nil)

// Bind returns the notifier's view of an open transaction of the SQLite
// store; a transaction of another store is an error wrapping
// store.ErrWrongTx.
func (s *Store) Bind(tx store.Tx) (notifier.Tx, error) {
	t, ok := tx.(*psqlite.Tx)
	if !ok {
		return nil, fmt.Errorf("notifier sqlite adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return &Tx{t}, nil
}

// DeleteWatchers deletes a repository's watchers.
func (t *Tx) DeleteWatchers(repo string) error {
	if _, err := t.ExecContext(t.Context(), `DELETE FROM watcher WHERE repo = ?`, repo); err != nil {
		return fmt.Errorf("delete watchers: %w", err)
	}
	return nil
}

// PutWatchers writes ws as watchers of repo.
func (t *Tx) PutWatchers(repo string, ws []notifier.Watcher) error {
	for _, w := range ws {
		if _, err := t.ExecContext(t.Context(), `INSERT INTO watcher (id, repo, url, secret, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET secret = excluded.secret`,
			w.ID, repo, w.URL, w.Secret, t.Now().UnixMicro()); err != nil {
			return fmt.Errorf("put watchers: %w", err)
		}
	}
	return nil
}

// Delivered reports which of watcherIDs have a delivered row for the run.
func (t *Tx) Delivered(correlationID string, watcherIDs []string) (map[string]bool, error) {
	ids, err := json.Marshal(watcherIDs)
	if err != nil {
		return nil, fmt.Errorf("delivered: %w", err)
	}
	out, err := psqlite.ScanSet(t.QueryContext(t.Context(), `SELECT watcher_id FROM delivery
		WHERE correlation_id = ? AND delivered AND watcher_id IN (SELECT value FROM json_each(?))`, correlationID, string(ids)))
	if err != nil {
		return nil, fmt.Errorf("delivered: %w", err)
	}
	return out, nil
}

// PutDeliveries writes delivery rows as given.
func (t *Tx) PutDeliveries(ds []notifier.Delivery) error {
	for _, d := range ds {
		if _, err := t.ExecContext(t.Context(), `INSERT INTO delivery (correlation_id, watcher_id, delivered, attempts, last_error, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(correlation_id, watcher_id) DO UPDATE SET
				delivered = excluded.delivered, attempts = excluded.attempts,
				last_error = excluded.last_error, updated_at = excluded.updated_at`,
			d.CorrelationID, d.WatcherID, d.Delivered, d.Attempts, d.LastError, t.Now().UnixMicro()); err != nil {
			return fmt.Errorf("put delivery: %w", err)
		}
	}
	return nil
}
