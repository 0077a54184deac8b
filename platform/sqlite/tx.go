package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Tx is one write transaction: the service's own statements through the
// embedded *sql.Tx, plus the platform's inbox and outbox.
type Tx struct {
	*sql.Tx
	ctx     context.Context
	now     time.Time
	emitted int
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
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	const attempts = 5
	var err error
	for i := 0; i < attempts; i++ {
		err = db.update(ctx, fn)
		if err == nil || !isBusy(err) || ctx.Err() != nil {
			break
		}
	}
	return err
}

func (db *DB) update(ctx context.Context, fn func(tx *Tx) error) error {
	stx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	// Rolls back when fn fails or panics (a recovered panic, as net/http
	// does, must not leave the single writer connection in a transaction);
	// a no-op after Commit.
	defer stx.Rollback()
	tx := &Tx{Tx: stx, ctx: ctx, now: db.now()}
	if err := fn(tx); err != nil {
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, f := range tx.after {
		f()
	}
	if tx.emitted > 0 {
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
		subject, ok := contracts.SubjectFor(e.Type())
		if !ok {
			return fmt.Errorf("emit: no subject for event type %q", e.Type())
		}
		msg, err := bus.Encode(subject, e)
		if err != nil {
			return fmt.Errorf("emit %s: %w", e.Type(), err)
		}
		h, err := json.Marshal(msg.Header)
		if err != nil {
			return fmt.Errorf("emit %s: %w", e.Type(), err)
		}
		body := msg.Data
		if body == nil {
			body = []byte{} // an event without data: nil would bind as NULL
		}
		if _, err := tx.ExecContext(tx.ctx,
			`INSERT INTO outbox (id, subject, headers, body, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
			e.ID(), subject, string(h), body, tx.now.UnixMicro()); err != nil {
			return fmt.Errorf("outbox insert: %w", err)
		}
		tx.emitted++
	}
	return nil
}

// MarkProcessed records that consumer handled eventID; first is false when
// it was already recorded (a duplicate delivery). The transaction stays
// usable either way.
func (tx *Tx) MarkProcessed(consumer, eventID string) (first bool, err error) {
	res, err := tx.ExecContext(tx.ctx,
		`INSERT INTO inbox (consumer, event_id, processed_at) VALUES (?, ?, ?) ON CONFLICT(consumer, event_id) DO NOTHING`,
		consumer, eventID, tx.now.UnixMicro())
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
	err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE consumer=? AND event_id=?`, consumer, eventID).Scan(&n)
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
