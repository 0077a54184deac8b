package ydb

import (
	"context"
	"fmt"
	"sync"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
)

// The statements of pruning: a page of the delivery table in key order
// within one shard (a range of the primary key), and one run's rows.
const (
	qDeliveryPage = `SELECT correlation_id, delivered, updated_at FROM delivery
WHERE corr_shard = $corr_shard AND correlation_id > $after
ORDER BY correlation_id, watcher_id
LIMIT $limit`
	qDeleteRun = `DELETE FROM delivery WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id`
)

// pagesPerCall bounds the pages one PruneDeliveries call reads.
const pagesPerCall = 8

// DeliveryPruner prunes the delivery rows of finished runs (see
// notifier/sqlite's PruneDeliveries for which) on YDB, where a TTL cannot
// tell a finished run from a failed one. It sweeps the table in key order,
// shard after shard, a few pages per call, and remembers where it stopped.
// Safe for concurrent use.
type DeliveryPruner struct {
	DB *pydb.DB

	mu    sync.Mutex
	shard uint32
	after string
}

// run is one run's rows as a page showed them.
type run struct {
	id        string
	rows      int
	finished  bool // every row delivered
	lastWrite time.Time
}

// PruneDeliveries deletes the rows of finished runs last written before
// now-olderThan among the next pages of the sweep (limit rows a page), each
// run in a transaction that reads it again first (a retry may have written
// it since the page was read), and returns the rows deleted.
func (p *DeliveryPruner) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cut := p.DB.Now().Add(-olderThan)
	var deleted int64
	for range pagesPerCall {
		runs, next, err := p.page(ctx, limit)
		if err != nil {
			return deleted, err
		}
		for _, r := range runs {
			if !r.finished || !r.lastWrite.Before(cut) {
				continue
			}
			n, err := p.deleteRun(ctx, r.id, cut)
			if err != nil {
				return deleted, err
			}
			deleted += n
		}
		p.after = next
		if next == "" {
			p.shard = (p.shard + 1) % pydb.Shards
		}
		if deleted >= int64(limit) {
			break
		}
	}
	return deleted, nil
}

// page reads the next page of the current shard and returns its complete
// runs and where the next page starts ("" when the shard is done). A full
// page's last run may go on in the next page: it is left to that page,
// unless it is the page's only run (a run of more rows than a page is
// skipped: never pruned, which is safe).
func (p *DeliveryPruner) page(ctx context.Context, limit int) ([]run, string, error) {
	rows, err := pydb.Collect(ctx, p.DB, qDeliveryPage, deliveryPageParams(p.shard, p.after, limit), func(row query.Row) (pageRow, error) {
		var r pageRow
		var err error
		r.id, r.delivered, r.at, err = scanDeliveryPage(row)
		return r, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("prune deliveries: %w", err)
	}
	runs, next := completeRuns(rows, limit)
	return runs, next, nil
}

// pageRow is one row of a page.
type pageRow struct {
	id        string
	delivered bool
	at        time.Time
}

// completeRuns groups a page's rows (in key order) into runs and returns
// those the page holds whole, with where the next page starts.
func completeRuns(rows []pageRow, limit int) ([]run, string) {
	var runs []run
	for _, row := range rows {
		if len(runs) == 0 || runs[len(runs)-1].id != row.id {
			runs = append(runs, run{id: row.id, finished: true})
		}
		r := &runs[len(runs)-1]
		r.rows++
		r.finished = r.finished && row.delivered
		if row.at.After(r.lastWrite) {
			r.lastWrite = row.at
		}
	}
	switch {
	case len(rows) < limit:
		return runs, ""
	case len(runs) == 1:
		return nil, runs[0].id
	default:
		return runs[:len(runs)-1], runs[len(runs)-2].id
	}
}

// deleteRun deletes the run's rows if they are still all delivered and
// older than cut, and returns how many it deleted.
func (p *DeliveryPruner) deleteRun(ctx context.Context, correlationID string, cut time.Time) (int64, error) {
	var n int64
	err := p.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := pydb.TxOf(stx)
		if err != nil {
			return err
		}
		n = 0
		still := true
		err = tx.Query(qDeliveryRun, deliveriesParams(correlationID), func(row query.Row) error {
			delivered, at, err := scanDeliveryRun(row)
			if err != nil {
				return err
			}
			n++
			still = still && delivered && at.Before(cut)
			return nil
		})
		if err != nil {
			return err
		}
		if !still || n == 0 {
			n = 0
			return nil
		}
		return tx.Exec(qDeleteRun, deliveriesParams(correlationID))
	})
	if err != nil {
		return 0, fmt.Errorf("prune deliveries of run %s: %w", correlationID, err)
	}
	return n, nil
}

// qDeliveryRun reads one run's rows for deleteRun's check (a range of the
// key).
const qDeliveryRun = `SELECT delivered, updated_at FROM delivery
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id`

func deliveryPageParams(shard uint32, after string, limit int) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(shard).
		Param("$after").Text(after).Param("$limit").Uint64(uint64(limit)).Build()
}

func scanDeliveryPage(row query.Row) (id string, delivered bool, at time.Time, err error) {
	err = row.Scan(&id, &delivered, &at)
	return id, delivered, at, err
}

func scanDeliveryRun(row query.Row) (delivered bool, at time.Time, err error) {
	err = row.Scan(&delivered, &at)
	return delivered, at, err
}
