// Package outbox publishes what services committed to their outbox table.
package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/sqlite"
)

// Store is what the relay needs of a service's database.
type Store interface {
	Unsent(ctx context.Context, limit int) ([]sqlite.OutboxRow, error)
	MarkSent(ctx context.Context, ids []string) error
	Committed() <-chan struct{}
}

// Publisher publishes one message and returns once JetStream acked it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error)
}

// Relay publishes every unsent outbox row, then marks it sent. It is woken
// right after a commit that emitted events and polls slowly as a safety
// net. Several relays may run on one outbox: there is no claim and no
// cursor, so a duplicate publish can happen and dies in JetStream's dedupe
// window (Nats-Msg-Id) or in the consumers' inbox; a crash between publish
// and mark-sent republishes, never loses.
type Relay struct {
	Store  Store
	Pub    Publisher
	Log    *slog.Logger
	Poll   time.Duration                    // safety-net interval; default 1s
	Batch  int                              // rows per round; default 256
	Before func(row sqlite.OutboxRow) error // test hook: fault point before publish
}

// Run relays until ctx is done. It returns nil on cancellation.
func (r *Relay) Run(ctx context.Context) error {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	backoff := 100 * time.Millisecond
	for {
		n, err := r.Flush(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.Log.WarnContext(ctx, "outbox relay round failed; will retry", "err", err, "retry_in", backoff.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if n > 0 {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Store.Committed():
		case <-t.C:
		}
	}
}

// Flush publishes one batch of unsent rows and marks the acked ones sent.
// It returns how many rows it marked.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 256
	}
	rows, err := r.Store.Unsent(ctx, batch)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	sent := make([]string, 0, len(rows))
	var pubErr error
	for _, row := range rows {
		if r.Before != nil {
			if pubErr = r.Before(row); pubErr != nil {
				break
			}
		}
		if _, pubErr = r.Pub.PublishMsg(ctx, row.Msg()); pubErr != nil {
			break
		}
		sent = append(sent, row.ID)
	}
	if err := r.Store.MarkSent(ctx, sent); err != nil {
		return 0, err
	}
	return len(sent), pubErr
}
