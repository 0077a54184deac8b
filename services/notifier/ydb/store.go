// Package ydb keeps the notifier's tables — watchers per repository and
// one delivery row per (saga run, watcher) — in its directory of the YDB
// database.
package ydb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/notifier"
)

//go:embed migrations/*.yql
var migrationFiles embed.FS

// Migrations of the notifier's tables, applied by pydb.Open.
var Migrations = func() pydb.Migrations {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return pydb.Migrations{Component: "notifier", FS: sub}
}()

// The notifier's statements; every value is a typed parameter.
const (
	qDeleteWatchers = `DELETE FROM watcher WHERE repo = $repo`
	qPutWatchers    = `UPSERT INTO watcher
SELECT repo, id, url, secret, created_at FROM AS_TABLE($watchers)`
	// A range of the primary key (repo, id), in key order.
	qWatchers   = `SELECT id, repo, url, secret FROM watcher WHERE repo = $repo ORDER BY id`
	qDeliveries = `SELECT watcher_id, delivered, attempts, last_error FROM delivery WHERE correlation_id = $correlation_id`
	// Read before the upsert in the same transaction: a row delivered
	// already stays delivered (the max of the two).
	qDelivered = `SELECT watcher_id FROM delivery
WHERE correlation_id = $correlation_id AND watcher_id IN $watcher_ids AND delivered`
	qPutDeliveries = `UPSERT INTO delivery
SELECT correlation_id, watcher_id, delivered, attempts, last_error, updated_at FROM AS_TABLE($deliveries)`
)

// Store implements notifier.Store (and the watchers API) on the notifier's
// YDB directory. Safe for concurrent use.
type Store struct {
	DB *pydb.DB
}

var _ notifier.Store = (*Store)(nil)

// ReplaceWatchers sets a repository's watchers, in one transaction.
func (s *Store) ReplaceWatchers(ctx context.Context, repo string, ws []notifier.Watcher) error {
	return s.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := pydb.TxOf(stx)
		if err != nil {
			return err
		}
		if err := tx.Exec(qDeleteWatchers, ydbsdk.ParamsBuilder().Param("$repo").Text(repo).Build()); err != nil {
			return fmt.Errorf("replace watchers: %w", err)
		}
		if len(ws) == 0 {
			return nil
		}
		items := make([]types.Value, len(ws))
		for i, w := range ws {
			items[i] = types.StructValue(
				types.StructFieldValue("repo", types.TextValue(repo)),
				types.StructFieldValue("id", types.TextValue(w.ID)),
				types.StructFieldValue("url", types.TextValue(w.URL)),
				types.StructFieldValue("secret", types.TextValue(w.Secret)),
				types.StructFieldValue("created_at", types.TimestampValueFromTime(tx.Now())),
			)
		}
		if err := tx.Exec(qPutWatchers, ydbsdk.ParamsBuilder().Param("$watchers").Any(types.ListValue(items...)).Build()); err != nil {
			return fmt.Errorf("replace watchers: %w", err)
		}
		return nil
	})
}

// Watchers lists a repository's watchers, by id.
func (s *Store) Watchers(ctx context.Context, repo string) ([]notifier.Watcher, error) {
	var out []notifier.Watcher
	err := s.DB.Query(ctx, qWatchers, ydbsdk.ParamsBuilder().Param("$repo").Text(repo).Build(), func(row query.Row) error {
		var w notifier.Watcher
		if err := row.Scan(&w.ID, &w.Repo, &w.URL, &w.Secret); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("watchers: %w", err)
	}
	return out, nil
}

// Deliveries returns a run's delivery rows by watcher id.
func (s *Store) Deliveries(ctx context.Context, correlationID string) (map[string]notifier.Delivery, error) {
	out := map[string]notifier.Delivery{}
	err := s.DB.Query(ctx, qDeliveries, ydbsdk.ParamsBuilder().Param("$correlation_id").Text(correlationID).Build(),
		func(row query.Row) error {
			d := notifier.Delivery{CorrelationID: correlationID}
			var attempts int64
			if err := row.Scan(&d.WatcherID, &d.Delivered, &attempts, &d.LastError); err != nil {
				return err
			}
			d.Attempts = int(attempts)
			out[d.WatcherID] = d
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	return out, nil
}

// RecordDeliveries upserts delivery rows inside the handler's transaction
// (of the YDB store). A delivered row stays delivered: the rows already
// delivered are read first, in the same transaction.
func (s *Store) RecordDeliveries(stx store.Tx, ds []notifier.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	tx, err := pydb.TxOf(stx)
	if err != nil {
		return err
	}
	byRun := map[string][]types.Value{}
	for _, d := range ds {
		byRun[d.CorrelationID] = append(byRun[d.CorrelationID], types.TextValue(d.WatcherID))
	}
	delivered := map[[2]string]bool{}
	for corr, ids := range byRun {
		err := tx.Query(qDelivered, ydbsdk.ParamsBuilder().
			Param("$correlation_id").Text(corr).
			Param("$watcher_ids").Any(types.ListValue(ids...)).
			Build(), func(row query.Row) error {
			var id string
			if err := row.Scan(&id); err != nil {
				return err
			}
			delivered[[2]string{corr, id}] = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("record delivery: %w", err)
		}
	}
	items := make([]types.Value, len(ds))
	for i, d := range ds {
		items[i] = types.StructValue(
			types.StructFieldValue("correlation_id", types.TextValue(d.CorrelationID)),
			types.StructFieldValue("watcher_id", types.TextValue(d.WatcherID)),
			types.StructFieldValue("delivered", types.BoolValue(d.Delivered || delivered[[2]string{d.CorrelationID, d.WatcherID}])),
			types.StructFieldValue("attempts", types.Int64Value(int64(d.Attempts))),
			types.StructFieldValue("last_error", types.TextValue(d.LastError)),
			types.StructFieldValue("updated_at", types.TimestampValueFromTime(tx.Now())),
		)
	}
	if err := tx.Exec(qPutDeliveries, ydbsdk.ParamsBuilder().Param("$deliveries").Any(types.ListValue(items...)).Build()); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	return nil
}
