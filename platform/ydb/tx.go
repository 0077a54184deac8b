package ydb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/store"
)

// Tx is one attempt of a serializable read-write transaction (DoTx runs the
// function again, with a new Tx, after a conflict). It implements store.Tx;
// service adapters reach it with TxOf and run their statements through
// Exec, QueryRow and Query. Not safe for concurrent use.
//
// The platform's writes are buffered: MarkProcessed reads the inbox at once
// and Emit only records the events; both tables are written by flush when
// the function has returned, after the service's own statements.
type Tx struct {
	ctx     context.Context
	qtx     query.TxActor
	db      *DB
	now     time.Time
	after   []func()
	marked  []inboxKey
	seen    map[inboxKey]bool
	rows    []store.OutboxRow
	emitted map[string]bool
}

type inboxKey struct{ consumer, eventID string }

var _ store.Tx = (*Tx)(nil)

// TxOf returns the YDB transaction behind tx, or an error wrapping
// store.ErrWrongTx.
func TxOf(tx store.Tx) (*Tx, error) {
	t, ok := tx.(*Tx)
	if !ok {
		return nil, fmt.Errorf("ydb adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return t, nil
}

// Update runs fn in one serializable read-write transaction through the
// SDK's DoTx, which commits when fn returns nil, rolls back otherwise, and
// runs fn again (a new Tx) after a retryable failure such as an
// optimistic-lock conflict. fn's own errors are returned as they are.
// The transaction is not marked idempotent: a commit whose outcome is
// unknown is reported, not blindly repeated (the caller's retry meets the
// inbox or the conditional writes).
func (db *DB) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	var done *Tx
	err := db.conn.drv.Query().DoTx(ctx, func(ctx context.Context, qtx query.TxActor) error {
		tx := &Tx{ctx: ctx, qtx: qtx, db: db, now: db.now()}
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.flush(); err != nil {
			return err
		}
		done = tx
		return nil
	}, query.WithTxSettings(query.TxSettings(query.WithSerializableReadWrite())), query.WithLabel("prsaga.update"))
	if err != nil {
		return err
	}
	for _, f := range done.after {
		f()
	}
	if len(done.rows) > 0 {
		select {
		case db.committed <- struct{}{}:
		default:
		}
	}
	return nil
}

// Context is the transaction's context.
func (tx *Tx) Context() context.Context { return tx.ctx }

// Now is when this attempt started, by the store's clock.
func (tx *Tx) Now() time.Time { return tx.now }

// AfterCommit registers f to run once the transaction has committed.
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

// Exec runs a statement in the transaction. q is relative to the service's
// directory; params carries every value (typed).
func (tx *Tx) Exec(q string, params ydb.Params) error {
	return tx.qtx.Exec(tx.ctx, tx.db.yql(q), execOpts(params)...)
}

// QueryRow runs a query in the transaction and returns its one row;
// query.ErrNoRows (IsNoRows) when there is none.
func (tx *Tx) QueryRow(q string, params ydb.Params) (query.Row, error) {
	return tx.qtx.QueryRow(tx.ctx, tx.db.yql(q), execOpts(params)...)
}

// Query runs a query in the transaction and calls each for every row of
// its one result set.
func (tx *Tx) Query(q string, params ydb.Params, each func(query.Row) error) error {
	rs, err := tx.qtx.QueryResultSet(tx.ctx, tx.db.yql(q), execOpts(params)...)
	if err != nil {
		return err
	}
	defer rs.Close(tx.ctx)
	return eachRow(tx.ctx, rs, each)
}

// MarkProcessed reads the inbox now (nothing of the transaction has
// written it yet) and records the row for flush. A duplicate is reported,
// never written, so the transaction stays usable.
func (tx *Tx) MarkProcessed(consumer, eventID string) (bool, error) {
	k := inboxKey{consumer, eventID}
	if tx.seen[k] {
		return false, nil
	}
	_, err := tx.QueryRow(qInboxSeen, inboxKeyParams(consumer, eventID))
	if tx.seen == nil {
		tx.seen = map[inboxKey]bool{}
	}
	switch {
	case err == nil:
		tx.seen[k] = true
		return false, nil
	case !IsNoRows(err):
		return false, fmt.Errorf("inbox lookup: %w", err)
	}
	tx.seen[k] = true
	tx.marked = append(tx.marked, k)
	return true, nil
}

// Emit records events for the outbox; flush writes those whose id the
// outbox does not hold yet.
func (tx *Tx) Emit(evs ...*event.Event) error {
	for _, e := range evs {
		if tx.emitted[e.ID()] {
			continue
		}
		row, err := bus.OutboxRow(e, tx.now)
		if err != nil {
			return err
		}
		if tx.emitted == nil {
			tx.emitted = map[string]bool{}
		}
		tx.emitted[e.ID()] = true
		tx.rows = append(tx.rows, row)
	}
	return nil
}

func inboxInsertValue(marked []inboxKey, now time.Time) types.Value {
	items := make([]types.Value, len(marked))
	for i, k := range marked {
		items[i] = types.StructValue(
			types.StructFieldValue("shard", types.Uint32Value(Shard(k.eventID))),
			types.StructFieldValue("consumer", types.TextValue(k.consumer)),
			types.StructFieldValue("event_id", types.TextValue(k.eventID)),
			types.StructFieldValue("processed_at", types.TimestampValueFromTime(now)),
		)
	}
	return types.ListValue(items...)
}

func outboxHeldParams(ids []string) ydb.Params {
	shards, list := shardsAndIDs(ids)
	return ydb.ParamsBuilder().Param("$shards").Any(shards).Param("$ids").Any(list).Build()
}

// shardsAndIDs are the lists of a lookup of ids by key (shard, …, id): the
// ids' distinct shards and the ids.
func shardsAndIDs(ids []string) (shards, list types.Value) {
	seen := map[uint32]bool{}
	var sv, iv []types.Value
	for _, id := range ids {
		if s := Shard(id); !seen[s] {
			seen[s] = true
			sv = append(sv, types.Uint32Value(s))
		}
		iv = append(iv, types.TextValue(id))
	}
	return types.ListValue(sv...), types.ListValue(iv...)
}

func scanID(row query.Row) (id string, err error) {
	err = row.Scan(&id)
	return id, err
}

func outboxInsertValue(rows []store.OutboxRow) (types.Value, error) {
	items := make([]types.Value, len(rows))
	for i, r := range rows {
		h, err := json.Marshal(r.Header)
		if err != nil {
			return nil, fmt.Errorf("outbox row %s headers: %w", r.ID, err)
		}
		items[i] = types.StructValue(
			types.StructFieldValue("shard", types.Uint32Value(Shard(r.ID))),
			types.StructFieldValue("id", types.TextValue(r.ID)),
			types.StructFieldValue("subject", types.TextValue(r.Subject)),
			types.StructFieldValue("headers", types.TextValue(string(h))),
			types.StructFieldValue("body", types.BytesValue(r.Body)),
			types.StructFieldValue("created_at", types.TimestampValueFromTime(r.CreatedAt)),
		)
	}
	return types.ListValue(items...), nil
}

// flush writes the buffered inbox and outbox rows: the outbox is read
// first (ids already there are kept as they are), then both tables are
// written with UPSERT in one statement — after that read, in this
// serializable transaction, an UPSERT only ever inserts: a concurrent
// writer of the same id invalidates the read and the commit fails, and
// DoTx's next attempt reads its row. (INSERT would abort the whole
// transaction on a duplicate.)
func (tx *Tx) flush() error {
	var fresh []store.OutboxRow
	if len(tx.rows) > 0 {
		ids := make([]string, len(tx.rows))
		for i, r := range tx.rows {
			ids[i] = r.ID
		}
		held := map[string]bool{}
		err := tx.Query(qOutboxHeld, outboxHeldParams(ids), func(row query.Row) error {
			id, err := scanID(row)
			held[id] = true
			return err
		})
		if err != nil {
			return fmt.Errorf("outbox lookup: %w", err)
		}
		for _, r := range tx.rows {
			if !held[r.ID] {
				fresh = append(fresh, r)
			}
		}
	}
	q, p, err := flushStatement(tx.marked, fresh, tx.now)
	if err != nil || q == "" {
		return err
	}
	if err := tx.Exec(q, p); err != nil {
		return fmt.Errorf("inbox and outbox insert: %w", err)
	}
	return nil
}

// flushStatement picks the statement that writes what there is: the inbox
// rows, the outbox rows, or both in one round trip.
func flushStatement(marked []inboxKey, fresh []store.OutboxRow, now time.Time) (string, ydb.Params, error) {
	b := ydb.ParamsBuilder()
	q := ""
	if len(marked) > 0 {
		b = b.Param("$inbox").Any(inboxInsertValue(marked, now))
		q = qInboxInsert
	}
	if len(fresh) > 0 {
		v, err := outboxInsertValue(fresh)
		if err != nil {
			return "", nil, err
		}
		b = b.Param("$outbox").Any(v)
		q = pick(q == "", qOutboxInsert, qInboxOutboxInsert)
	}
	return q, b.Build(), nil
}

func pick(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}
