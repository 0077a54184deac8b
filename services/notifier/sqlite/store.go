// Package sqlite holds the notifier's tables: watchers per repository and
// one delivery row per (saga run, watcher).
package sqlite

import (
	"context"
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/notifier"
)

// Store implements notifier.Store on the notifier's database. Safe for
// concurrent use.
type Store struct {
	DB *psqlite.DB
}

var _ notifier.Store = (*Store)(nil)

// Watchers lists a repository's watchers.
func (s *Store) Watchers(ctx context.Context, repo string) ([]notifier.Watcher, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, repo, url, secret FROM watcher WHERE repo = ? ORDER BY id`, repo)
	if err != nil {
		return nil, fmt.Errorf("watchers: %w", err)
	}
	defer rows.Close()
	var out []notifier.Watcher
	for rows.Next() {
		var w notifier.Watcher
		if err := rows.Scan(&w.ID, &w.Repo, &w.URL, &w.Secret); err != nil {
			return nil, fmt.Errorf("watchers: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Deliveries returns this run's delivery rows by watcher id.
func (s *Store) Deliveries(ctx context.Context, correlationID string) (map[string]notifier.Delivery, error) {
	rows, err := s.DB.QueryContext(ctx,
		`SELECT watcher_id, delivered, attempts, last_error FROM delivery WHERE correlation_id = ?`, correlationID)
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	defer rows.Close()
	out := map[string]notifier.Delivery{}
	for rows.Next() {
		d := notifier.Delivery{CorrelationID: correlationID}
		if err := rows.Scan(&d.WatcherID, &d.Delivered, &d.Attempts, &d.LastError); err != nil {
			return nil, fmt.Errorf("deliveries: %w", err)
		}
		out[d.WatcherID] = d
	}
	return out, rows.Err()
}
