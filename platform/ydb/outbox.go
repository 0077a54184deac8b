package ydb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/platform/store"
)

// epoch is the lower bound of the unsent-rows range: every real
// pending_since is after it, a NULL (sent) one is not in the range.
var epoch = time.Unix(0, 0).UTC()

// Unsent lists up to limit unsent rows, oldest first, through
// idx_outbox_unsent (a range scan of the unsent rows only).
func (db *DB) Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.OutboxRow
	err := db.Query(ctx, `SELECT id, subject, headers, body, created_at
FROM outbox VIEW idx_outbox_unsent
WHERE pending_since >= $epoch
ORDER BY pending_since, id
LIMIT $limit`,
		ydb.ParamsBuilder().Param("$epoch").Timestamp(epoch).Param("$limit").Uint64(uint64(limit)).Build(),
		func(row query.Row) error {
			var r store.OutboxRow
			var h string
			if err := row.Scan(&r.ID, &r.Subject, &h, &r.Body, &r.CreatedAt); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(h), &r.Header); err != nil {
				return fmt.Errorf("outbox row %s headers: %w", r.ID, err)
			}
			if r.Header == nil {
				r.Header = nats.Header{}
			}
			out = append(out, r)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("outbox unsent: %w", err)
	}
	return out, nil
}

// MarkSent marks rows published: sent_at set (the TTL column) and
// pending_since cleared (out of the unsent range) with a typed NULL
// parameter (Optional<Timestamp>, the column's own type). Rows already sent or
// unknown are left alone.
func (db *DB) MarkSent(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	list := make([]types.Value, len(ids))
	for i, id := range ids {
		list[i] = types.TextValue(id)
	}
	err := db.conn.drv.Query().Exec(ctx, db.yql(`UPDATE outbox
SET sent_at = $now, pending_since = $no_time
WHERE id IN $ids AND sent_at IS NULL`),
		query.WithParameters(ydb.ParamsBuilder().
			Param("$now").Timestamp(db.now()).
			Param("$no_time").BeginOptional().Timestamp(nil).EndOptional().
			Param("$ids").Any(types.ListValue(list...)).
			Build()),
		query.WithTxControl(query.SerializableReadWriteTxControl(query.CommitTx())),
		query.WithIdempotent())
	if err != nil {
		return fmt.Errorf("outbox mark sent: %w", err)
	}
	return nil
}

// OutboxStats counts unsent rows and the age of the oldest, through
// idx_outbox_unsent.
func (db *DB) OutboxStats(ctx context.Context) (int, time.Duration, error) {
	row, err := db.QueryRow(ctx, `SELECT COUNT(*) AS n, MIN(pending_since) AS oldest
FROM outbox VIEW idx_outbox_unsent
WHERE pending_since >= $epoch`,
		ydb.ParamsBuilder().Param("$epoch").Timestamp(epoch).Build())
	if err != nil {
		return 0, 0, fmt.Errorf("outbox stats: %w", err)
	}
	var n uint64
	var oldest *time.Time
	if err := row.Scan(&n, &oldest); err != nil {
		return 0, 0, fmt.Errorf("outbox stats: %w", err)
	}
	var age time.Duration
	if oldest != nil {
		age = db.now().Sub(*oldest)
	}
	return int(n), age, nil
}

// Processed reports whether consumer already handled eventID.
func (db *DB) Processed(ctx context.Context, consumer, eventID string) (bool, error) {
	_, err := db.QueryRow(ctx, `SELECT processed_at FROM inbox WHERE consumer = $consumer AND event_id = $event_id`,
		ydb.ParamsBuilder().Param("$consumer").Text(consumer).Param("$event_id").Text(eventID).Build())
	switch {
	case err == nil:
		return true, nil
	case IsNoRows(err):
		return false, nil
	}
	return false, fmt.Errorf("inbox lookup: %w", err)
}

// ExpireInbox deletes inbox rows processed before now-olderThan, counting
// them first in the same transaction (YDB reports no affected rows). The
// inbox's TTL does the same in the background; this is for explicit
// clean-ups and tests. It scans the inbox.
func (db *DB) ExpireInbox(ctx context.Context, olderThan time.Duration) (int64, error) {
	cut := db.now().Add(-olderThan)
	var n uint64
	err := db.conn.drv.Query().DoTx(ctx, func(ctx context.Context, tx query.TxActor) error {
		p := ydb.ParamsBuilder().Param("$cut").Timestamp(cut).Build()
		row, err := tx.QueryRow(ctx, db.yql(`SELECT COUNT(*) AS n FROM inbox WHERE processed_at < $cut`), query.WithParameters(p))
		if err != nil {
			return err
		}
		if err := row.Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return tx.Exec(ctx, db.yql(`DELETE FROM inbox WHERE processed_at < $cut`), query.WithParameters(p))
	}, query.WithIdempotent())
	if err != nil {
		return 0, fmt.Errorf("expire inbox: %w", err)
	}
	return int64(n), nil
}
