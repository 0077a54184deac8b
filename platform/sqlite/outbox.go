package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/platform/store"
)

// OutboxRow is an event waiting to be published (store.OutboxRow).
type OutboxRow = store.OutboxRow

// unsentMax is the LIMIT of the prepared unsent-rows query.
const unsentMax = 1024

// Unsent lists up to limit unsent rows, oldest first. No cursor: a row
// committed late by a slow transaction is still found by the next call.
func (db *DB) Unsent(ctx context.Context, limit int) ([]OutboxRow, error) {
	if limit > unsentMax {
		rows, err := db.r.QueryContext(ctx, sqlOutboxUnsentN, limit)
		return scanUnsent(rows, err, limit)
	}
	rows, err := db.reads.unsent.QueryContext(ctx)
	return scanUnsent(rows, err, limit)
}

// UnsentExcept is Unsent leaving out the rows with the given ids (those a
// relay published and has not marked sent yet), so that they are neither
// read nor decoded again.
func (db *DB) UnsentExcept(ctx context.Context, limit int, except []string) ([]OutboxRow, error) {
	if len(except) == 0 || limit > unsentMax {
		return db.Unsent(ctx, limit)
	}
	ids, err := json.Marshal(except)
	if err != nil {
		return nil, fmt.Errorf("outbox unsent: %w", err)
	}
	rows, err := db.reads.unsentExcept.QueryContext(ctx, string(ids))
	return scanUnsent(rows, err, limit)
}

func scanUnsent(rows *sql.Rows, err error, limit int) ([]OutboxRow, error) {
	if err != nil {
		return nil, fmt.Errorf("outbox unsent: %w", err)
	}
	defer rows.Close()
	var out []OutboxRow
	for len(out) < limit && rows.Next() {
		var r OutboxRow
		var h string
		var at int64
		if err := rows.Scan(&r.ID, &r.Subject, &h, &r.Body, &at); err != nil {
			return nil, fmt.Errorf("outbox unsent: %w", err)
		}
		if r.Header, err = decodeHeaders(h); err != nil {
			return nil, fmt.Errorf("outbox row %s headers: %w", r.ID, err)
		}
		r.CreatedAt = time.UnixMicro(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox unsent: %w", err)
	}
	return out, nil
}

// MarkSent marks rows as published (after JetStream acked them), in one
// statement (the ids travel as one JSON array, so the statement is the
// same for any number of rows and stays prepared), in a transaction of the
// group commit. Rows a transaction already marked since MarkSoon are
// skipped.
func (db *DB) MarkSent(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ids = db.marks.unfolded(ids)
	if len(ids) == 0 {
		return nil
	}
	return db.markNow(ctx, ids)
}

// OutboxStats reports unsent rows and the age of the oldest.
func (db *DB) OutboxStats(ctx context.Context) (pending int, oldest time.Duration, err error) {
	var min *int64
	if err := db.r.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM outbox WHERE sent_at IS NULL`).Scan(&pending, &min); err != nil {
		return 0, 0, fmt.Errorf("outbox stats: %w", err)
	}
	if min != nil {
		oldest = db.now().Sub(time.UnixMicro(*min))
	}
	return pending, oldest, nil
}
