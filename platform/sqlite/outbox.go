package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// OutboxRow is an event waiting to be published.
type OutboxRow struct {
	ID        string
	Subject   string
	Header    nats.Header
	Body      []byte
	CreatedAt time.Time
}

// Msg is the row as a NATS message (Nats-Msg-Id is in the headers).
func (r OutboxRow) Msg() *nats.Msg {
	return &nats.Msg{Subject: r.Subject, Header: r.Header, Data: r.Body}
}

// Unsent lists up to limit unsent rows, oldest first. No cursor: a row
// committed late by a slow transaction is still found by the next call.
func (db *DB) Unsent(ctx context.Context, limit int) ([]OutboxRow, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT id, subject, headers, body, created_at FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox unsent: %w", err)
	}
	defer rows.Close()
	var out []OutboxRow
	for rows.Next() {
		var r OutboxRow
		var h string
		var at int64
		if err := rows.Scan(&r.ID, &r.Subject, &h, &r.Body, &at); err != nil {
			return nil, fmt.Errorf("outbox unsent: %w", err)
		}
		if err := json.Unmarshal([]byte(h), &r.Header); err != nil {
			return nil, fmt.Errorf("outbox row %s headers: %w", r.ID, err)
		}
		r.CreatedAt = time.UnixMicro(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// MarkSent marks rows as published (after JetStream acked them).
func (db *DB) MarkSent(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, db.now().UnixMicro())
	for _, id := range ids {
		args = append(args, id)
	}
	q := `UPDATE outbox SET sent_at = ? WHERE sent_at IS NULL AND id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	if _, err := db.w.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("outbox mark sent: %w", err)
	}
	return nil
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
