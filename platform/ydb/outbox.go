package ydb

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
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

// Shards is how many values the shard column of the outbox and the inbox
// takes: writes spread over this many key ranges (see docs/ydb.md).
const Shards = 32

// Shard is the shard of an id: FNV-1a of its bytes, modulo Shards.
func Shard(id string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32() % Shards
}

func allShards() types.Value {
	list := make([]types.Value, Shards)
	for i := range list {
		list[i] = types.Uint32Value(uint32(i))
	}
	return types.ListValue(list...)
}

func unsentParams(limit int) ydb.Params {
	return ydb.ParamsBuilder().Param("$shards").Any(allShards()).Param("$epoch").Timestamp(epoch).
		Param("$limit").Uint64(uint64(limit)).Build()
}

// scanUnsent reads one row of qUnsent; headers is the JSON of the NATS
// headers.
func scanUnsent(row query.Row) (r store.OutboxRow, headers string, err error) {
	err = row.Scan(&r.ID, &r.Subject, &headers, &r.Body, &r.CreatedAt)
	return r, headers, err
}

// Unsent lists up to limit unsent rows, oldest first, through
// idx_outbox_unsent: one range per shard, of unsent rows only.
func (db *DB) Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.OutboxRow
	err := db.Query(ctx, qUnsent, unsentParams(limit),
		func(row query.Row) error {
			r, h, err := scanUnsent(row)
			if err != nil {
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

func markSentParams(ids []string, now time.Time) ydb.Params {
	rows := make([]types.Value, len(ids))
	for i, id := range ids {
		rows[i] = types.StructValue(
			types.StructFieldValue("shard", types.Uint32Value(Shard(id))),
			types.StructFieldValue("id", types.TextValue(id)),
			// Both in the columns' own type, Optional<Timestamp> (UPDATE ON
			// wants the types of the table); a NULL pending_since takes the
			// row out of the unsent range.
			types.StructFieldValue("sent_at", types.OptionalValue(types.TimestampValueFromTime(now))),
			types.StructFieldValue("pending_since", types.NullValue(types.TypeTimestamp)),
		)
	}
	return ydb.ParamsBuilder().Param("$sent").Any(types.ListValue(rows...)).Build()
}

// MarkSent marks rows published: sent_at set (the TTL column) and
// pending_since cleared (out of the unsent range), by key. Unknown ids are
// ignored (UPDATE ON changes only rows that exist); a row marked twice
// keeps being sent, its sent_at moved.
func (db *DB) MarkSent(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := db.conn.drv.Query().Exec(ctx, db.yql(qMarkSent),
		query.WithParameters(markSentParams(ids, db.now())),
		query.WithTxControl(query.SerializableReadWriteTxControl(query.CommitTx())),
		query.WithIdempotent())
	if err != nil {
		return fmt.Errorf("outbox mark sent: %w", err)
	}
	return nil
}

func outboxStatsParams() ydb.Params {
	return ydb.ParamsBuilder().Param("$shards").Any(allShards()).Param("$epoch").Timestamp(epoch).Build()
}

func scanOutboxStats(row query.Row) (n uint64, oldest *time.Time, err error) {
	err = row.Scan(&n, &oldest)
	return n, oldest, err
}

// OutboxStats counts unsent rows and the age of the oldest, through
// idx_outbox_unsent (it reads every unsent entry: the backlog it reports).
func (db *DB) OutboxStats(ctx context.Context) (int, time.Duration, error) {
	row, err := db.QueryRow(ctx, qOutboxStats, outboxStatsParams())
	if err != nil {
		return 0, 0, fmt.Errorf("outbox stats: %w", err)
	}
	n, oldest, err := scanOutboxStats(row)
	if err != nil {
		return 0, 0, fmt.Errorf("outbox stats: %w", err)
	}
	var age time.Duration
	if oldest != nil {
		age = db.now().Sub(*oldest)
	}
	return int(n), age, nil
}

func inboxKeyParams(consumer, eventID string) ydb.Params {
	return ydb.ParamsBuilder().Param("$shard").Uint32(Shard(eventID)).
		Param("$consumer").Text(consumer).Param("$event_id").Text(eventID).Build()
}

func scanInboxSeen(row query.Row) error {
	var at time.Time
	return row.Scan(&at)
}

// Processed reports whether consumer already handled eventID.
func (db *DB) Processed(ctx context.Context, consumer, eventID string) (bool, error) {
	row, err := db.QueryRow(ctx, qInboxSeen, inboxKeyParams(consumer, eventID))
	switch {
	case err == nil:
		if err := scanInboxSeen(row); err != nil {
			return false, fmt.Errorf("inbox lookup: %w", err)
		}
		return true, nil
	case IsNoRows(err):
		return false, nil
	}
	return false, fmt.Errorf("inbox lookup: %w", err)
}

// ProcessedAny reports which of eventIDs consumer already handled, in one
// read (the runner's inbox pre-check of a batch, runner.InboxReader).
func (db *DB) ProcessedAny(ctx context.Context, consumer string, eventIDs []string) (map[string]bool, error) {
	seen := make(map[string]bool, len(eventIDs))
	if len(eventIDs) == 0 {
		return seen, nil
	}
	err := db.Query(ctx, qInboxSeenAny, inboxSeenAnyParams(consumer, eventIDs), func(row query.Row) error {
		id, err := scanID(row)
		seen[id] = true
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("inbox lookup: %w", err)
	}
	return seen, nil
}

func inboxSeenAnyParams(consumer string, ids []string) ydb.Params {
	shards, list := shardsAndIDs(ids)
	return ydb.ParamsBuilder().Param("$shards").Any(shards).Param("$consumer").Text(consumer).Param("$ids").Any(list).Build()
}

// expireBatch bounds one round of ExpireInbox: the keys one snapshot read
// returns and one transaction deletes.
const expireBatch = 1000

func expiredParams(cut time.Time) ydb.Params {
	return ydb.ParamsBuilder().Param("$cut").Timestamp(cut).Param("$limit").Uint64(expireBatch).Build()
}

type inboxRowKey struct {
	shard             uint32
	consumer, eventID string
}

func scanExpired(row query.Row) (k inboxRowKey, err error) {
	err = row.Scan(&k.shard, &k.consumer, &k.eventID)
	return k, err
}

func deleteInboxParams(keys []inboxRowKey) ydb.Params {
	items := make([]types.Value, len(keys))
	for i, k := range keys {
		items[i] = types.StructValue(
			types.StructFieldValue("shard", types.Uint32Value(k.shard)),
			types.StructFieldValue("consumer", types.TextValue(k.consumer)),
			types.StructFieldValue("event_id", types.TextValue(k.eventID)),
		)
	}
	return ydb.ParamsBuilder().Param("$keys").Any(types.ListValue(items...)).Build()
}

// ExpireInbox deletes inbox rows processed before now-olderThan, in
// bounded rounds: a snapshot read (no locks, so concurrent inserts do not
// abort it) finds up to expireBatch expired keys, and a short transaction
// deletes exactly those keys. Expired rows are never written again, so a
// concurrent writer cannot conflict with the delete. The inbox's TTL does
// the same in the background; this is for explicit clean-ups and tests.
// The count is of keys found expired and deleted (a row the TTL removed in
// between is counted too).
func (db *DB) ExpireInbox(ctx context.Context, olderThan time.Duration) (int64, error) {
	cut := db.now().Add(-olderThan)
	var total int64
	for {
		var keys []inboxRowKey
		err := db.Query(ctx, qExpiredInbox, expiredParams(cut), func(row query.Row) error {
			k, err := scanExpired(row)
			keys = append(keys, k)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("expire inbox: %w", err)
		}
		if len(keys) == 0 {
			return total, nil
		}
		err = db.conn.drv.Query().Exec(ctx, db.yql(qDeleteInbox),
			query.WithParameters(deleteInboxParams(keys)),
			query.WithTxControl(query.SerializableReadWriteTxControl(query.CommitTx())),
			query.WithIdempotent())
		if err != nil {
			return total, fmt.Errorf("expire inbox: %w", err)
		}
		total += int64(len(keys))
		if len(keys) < expireBatch {
			return total, nil
		}
	}
}
