// Package ydb keeps the notifier's tables — watchers per repository and
// one delivery row per (saga run, watcher) — in its directory of the YDB
// database.
package ydb

import (
	"context"
	"fmt"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/notifier"
)

// The notifier's statements; every value is a typed parameter.
const (
	qDeleteWatchers = `DELETE FROM watcher WHERE repo = $repo`
	qPutWatchers    = `UPSERT INTO watcher
SELECT repo, id, url, secret, created_at FROM AS_TABLE($watchers)`
	// A range of the primary key (repo, id), in key order.
	qWatchers = `SELECT id, repo, url, secret FROM watcher WHERE repo = $repo ORDER BY id`
	// A range of the key (corr_shard, correlation_id, watcher_id).
	qDeliveries = `SELECT watcher_id, delivered, attempts, last_error FROM delivery
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id`
	// Read before the upsert in the same transaction (notifier.RecordDeliveries):
	// a row delivered already stays delivered.
	qDelivered = `SELECT watcher_id FROM delivery
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id AND watcher_id IN $watcher_ids AND delivered`
	qPutDeliveries = `UPSERT INTO delivery
SELECT corr_shard, correlation_id, watcher_id, delivered, attempts, last_error, updated_at FROM AS_TABLE($deliveries)`
)

// Store implements notifier.Store on the notifier's YDB directory. Safe for
// concurrent use.
type Store struct {
	DB *pydb.DB
}

var _ notifier.Store = (*Store)(nil)

// Watchers lists a repository's watchers, by id.
func (s *Store) Watchers(ctx context.Context, repo string) ([]notifier.Watcher, error) {
	out, err := pydb.Collect(ctx, s.DB, qWatchers, repoParams(repo), scanWatcher)
	if err != nil {
		return nil, fmt.Errorf("watchers: %w", err)
	}
	return out, nil
}

// Deliveries returns a run's delivery rows by watcher id.
func (s *Store) Deliveries(ctx context.Context, correlationID string) (map[string]notifier.Delivery, error) {
	out := map[string]notifier.Delivery{}
	err := s.DB.Query(ctx, qDeliveries, deliveriesParams(correlationID),
		func(row query.Row) error {
			d, err := scanDelivery(row)
			if err != nil {
				return err
			}
			d.CorrelationID = correlationID
			out[d.WatcherID] = d
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	return out, nil
}
