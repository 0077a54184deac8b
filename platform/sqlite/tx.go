package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/store"
)

var (
	_ store.DB = (*DB)(nil)
	_ store.Tx = (*Tx)(nil)
)

// TxOf returns the SQLite transaction behind tx (a service adapter's way to
// its own statements), or an error wrapping store.ErrWrongTx.
func TxOf(tx store.Tx) (*Tx, error) {
	t, ok := tx.(*Tx)
	if !ok {
		return nil, fmt.Errorf("sqlite adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return t, nil
}

// Tx is one unit of a write transaction: the service's own statements
// (ExecContext, QueryContext, QueryRowContext and their context-free
// forms, as *sql.Tx has them; writer.go), plus the platform's inbox and
// outbox. Statements are prepared once per connection and reused.
type Tx struct {
	d       *dtx // the transaction, shared by the units of a group commit
	db      *DB
	ctx     context.Context
	now     time.Time
	emitted int
	rows    []OutboxRow // what Emit appended, for the relay once committed
	after   []func()
}

// AfterCommit registers f to run once the transaction has committed (for
// logs and metrics: the closure itself may run more than once).
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

// Context is the transaction's context.
func (tx *Tx) Context() context.Context { return tx.ctx }

// Now is the time the transaction started, by the store's clock.
func (tx *Tx) Now() time.Time { return tx.now }

// Update runs fn in one write transaction and commits when it returns nil.
// fn may run more than once (on lock contention), so it must have no side
// effects outside the transaction.
func (db *DB) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	errs, err := db.UpdateEach(ctx, []func(tx store.Tx) error{fn})
	if err != nil {
		return err
	}
	return errs[0]
}

// UpdateEach runs fns, in order, in one write transaction, each as if inside
// its own savepoint: a fn that fails is rolled back alone and its error is
// errs[i]; the others commit together, their AfterCommit functions run
// once the transaction has committed. A non-nil err means the transaction
// as a whole failed (begin, a lost savepoint, commit): nothing was
// committed and errs is nil. Every fn sees the writes of those before it,
// as if each ran in its own transaction, one after another. The whole may
// run more than once (on lock contention, and once more with a savepoint
// per fn when a fn fails: see commitGroup), so fns must have no side
// effects outside the transaction. A panicking fn rolls everything back
// and the panic propagates.
//
// Calls that arrive while a transaction is running are committed together
// in the next one (group commit, see group): each call's fns keep their
// own savepoints and outcomes, and its context is the one their Tx sees.
func (db *DB) UpdateEach(ctx context.Context, fns []func(tx store.Tx) error) (errs []error, err error) {
	req := &request{ctx: ctx, fns: fns}
	db.group.run(req, db.commitGroup)
	if req.panicked != nil {
		panic(req.panicked)
	}
	// In the caller's goroutine, once the writer is free again: not in the
	// transaction of the calls grouped with this one.
	for _, f := range req.after {
		f()
	}
	return req.errs, req.err
}

// commitGroup commits the requests' fns in one transaction, retrying the
// whole on lock contention, and sets each request's outcome.
//
// The units run without savepoints first: a savepoint costs two statements
// and a copy of every page its unit touches first (SQLite's statement
// journal), and units rarely fail. When one does, nothing is committed and
// the whole runs again with a savepoint per unit.
func (db *DB) commitGroup(reqs []*request) {
	const attempts = 5
	for i := 0; i < attempts; i++ {
		// A call whose context has ended is not begun (or retried), as its
		// own transaction would not be.
		live := reqs[:0:0]
		for _, r := range reqs {
			if err := r.ctx.Err(); err != nil {
				r.errs, r.err = nil, fmt.Errorf("begin: %w", err)
				continue
			}
			live = append(live, r)
		}
		if len(live) == 0 {
			return
		}
		reqs = live
		err := db.updateEach(reqs, db.savepointsNext > 0)
		if err == errUnitFailed {
			// Run again with a savepoint per unit, so that the failed one
			// is rolled back alone; and so for a while, as failures come
			// in runs (redeliveries after a restart are duplicates).
			db.savepointsNext = savepointsAfterFailure
			err = db.updateEach(reqs, true)
		}
		if db.savepointsNext > 0 {
			db.savepointsNext--
		}
		if err == nil || !isBusy(err) || i == attempts-1 {
			for _, r := range reqs {
				if err != nil {
					r.errs, r.err = nil, err
				}
			}
			return
		}
	}
}

// errUnitFailed: a unit failed in a transaction run without savepoints,
// which was rolled back as a whole.
var errUnitFailed = errors.New("a unit failed without a savepoint")

// savepointsAfterFailure is how many transactions after one whose unit
// failed run with savepoints from the start.
const savepointsAfterFailure = 16

// updateEach runs one transaction of reqs' units; with savepoints each unit
// in its own, else a failing unit rolls back the lot (errUnitFailed when
// there are others).
func (db *DB) updateEach(reqs []*request, savepoints bool) error {
	// The transaction serves several callers: none's cancellation may
	// abort the others' units. Each unit's statements use its own context.
	ctx := context.WithoutCancel(reqs[0].ctx)
	return db.withWriter(ctx, func() error { return db.updateOn(ctx, reqs, savepoints) })
}

// updateOn is updateEach on the write connection, lent by withWriter.
func (db *DB) updateOn(ctx context.Context, reqs []*request, savepoints bool) error {
	// BEGIN and COMMIT run as the other statements do, prepared once
	// (the driver's BeginTx and Commit parse their SQL every time).
	if err := db.wr.exec(ctx, sqlBegin); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	d := &dtx{w: &db.wr, live: true}
	committed := false
	// Rolls back when a fn fails or panics (a recovered panic, as net/http
	// does, must not leave the single writer connection in a transaction),
	// and after a failed COMMIT that left the transaction open (busy).
	defer func() {
		d.end()
		if !committed {
			db.wr.exec(ctx, sqlRollback)
		}
		d.live = false
	}()
	now := db.now()
	n := 0
	for _, r := range reqs {
		r.errs = make([]error, len(r.fns))
		r.txs = make([]*Tx, len(r.fns))
		n += len(r.fns)
	}
	for _, r := range reqs {
		for i, fn := range r.fns {
			tx := &Tx{d: d, db: db, ctx: r.ctx, now: now}
			r.txs[i] = tx
			if n == 1 || !savepoints {
				if r.errs[i] = r.call(fn, tx); r.errs[i] != nil {
					if n == 1 {
						return nil // its failure rolls back the lot: its own
					}
					return errUnitFailed
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, sqlSavepoint); err != nil {
				return fmt.Errorf("savepoint: %w", err)
			}
			if r.errs[i] = r.call(fn, tx); r.errs[i] != nil {
				if _, err := tx.ExecContext(ctx, sqlRollbackTo); err != nil {
					return fmt.Errorf("roll back to savepoint after %v: %w", r.errs[i], err)
				}
			}
			if _, err := tx.ExecContext(ctx, sqlRelease); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
		}
	}
	// Rows a relay published meanwhile are marked sent here, with the
	// callers' units (marks.go), rather than in a transaction of their own.
	folded := db.marks.take()
	if len(folded) > 0 {
		ftx := &Tx{d: d, db: db, ctx: ctx, now: now}
		switch err := db.fold(ctx, ftx, folded, now.UnixMicro()); {
		case err == errFoldFailed:
			db.marks.settle(folded, false)
			folded = nil
		case err != nil:
			db.marks.settle(folded, false)
			return err
		}
	}
	d.end()
	if err := db.wr.exec(ctx, sqlCommit); err != nil {
		db.marks.settle(folded, false)
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	db.marks.settle(folded, true)
	emitted := 0
	for _, r := range reqs {
		for i, tx := range r.txs {
			if r.errs[i] != nil {
				continue
			}
			emitted += tx.emitted
			r.after = append(r.after, tx.after...)
			db.fresh.add(tx.rows)
		}
	}
	if emitted > 0 {
		select {
		case db.committed <- struct{}{}:
		default:
		}
	}
	return nil
}

// Emit appends events to the outbox; the relay publishes them after commit.
// An event already in the outbox (same id) is kept as it is.
func (tx *Tx) Emit(evs ...*event.Event) error {
	for _, e := range evs {
		subject, err := contracts.SubjectOf(e)
		if err != nil {
			return fmt.Errorf("emit %s: %w", e.Type(), err)
		}
		msg, err := bus.Encode(subject, e)
		if err != nil {
			return fmt.Errorf("emit %s: %w", e.Type(), err)
		}
		h, err := encodeHeaders(msg.Header)
		if err != nil {
			return fmt.Errorf("emit %s: %w", e.Type(), err)
		}
		body := msg.Data
		if body == nil {
			body = []byte{} // an event without data: nil would bind as NULL
		}
		res, err := tx.ExecContext(tx.ctx, sqlOutboxInsert, e.ID(), subject, h, body, tx.now.UnixMicro())
		if err != nil {
			return fmt.Errorf("outbox insert: %w", err)
		}
		tx.emitted++
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			// Micro-second precision, as the column keeps it.
			tx.rows = append(tx.rows, OutboxRow{ID: e.ID(), Subject: subject, Header: msg.Header, Body: body,
				CreatedAt: time.UnixMicro(tx.now.UnixMicro())})
		}
	}
	return nil
}

// MarkProcessed records that consumer handled eventID; first is false when
// it was already recorded (a duplicate delivery). The transaction stays
// usable either way.
func (tx *Tx) MarkProcessed(consumer, eventID string) (first bool, err error) {
	res, err := tx.ExecContext(tx.ctx, sqlInboxInsert, consumer, eventID, tx.now.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("inbox insert: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("inbox insert: %w", err)
	}
	return n == 1, nil
}

// Processed reports whether consumer already handled eventID.
func (db *DB) Processed(ctx context.Context, consumer, eventID string) (bool, error) {
	var n int
	err := db.reads.processed.QueryRowContext(ctx, consumer, eventID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("inbox lookup: %w", err)
	}
	return n > 0, nil
}

// ExpireInbox deletes inbox rows older than the stream keeps messages.
func (db *DB) ExpireInbox(ctx context.Context, olderThan time.Duration) (int64, error) {
	res, err := db.w.ExecContext(ctx, `DELETE FROM inbox WHERE processed_at < ?`, db.now().Add(-olderThan).UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("expire inbox: %w", err)
	}
	return res.RowsAffected()
}

// ProcessedAny reports which of eventIDs consumer already handled, in one
// query.
func (db *DB) ProcessedAny(ctx context.Context, consumer string, eventIDs []string) (map[string]bool, error) {
	list, err := json.Marshal(eventIDs)
	if err != nil {
		return nil, fmt.Errorf("inbox lookup: %w", err)
	}
	seen, err := ScanSet(readRows(db.reads.processedAny.QueryContext(ctx, consumer, string(list))))
	if err != nil {
		return nil, fmt.Errorf("inbox lookup: %w", err)
	}
	return seen, nil
}
