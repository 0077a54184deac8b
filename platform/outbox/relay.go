// Package outbox publishes what services committed to their outbox table.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/backoff"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/store"
)

// Store is what the relay needs of a service's database.
type Store interface {
	Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error)
	MarkSent(ctx context.Context, ids []string) error
	Committed() <-chan struct{}
}

// ExceptStore is a Store that can leave rows out of Unsent: the relay's
// held rows are then not read again every round.
type ExceptStore interface {
	UnsentExcept(ctx context.Context, limit int, except []string) ([]store.OutboxRow, error)
}

// CommittedStore is a Store that hands over the rows it committed (in
// commit order) so that a relay woken by Committed need not read them back.
// complete is false when some were dropped: the table must be read.
type CommittedStore interface {
	CommittedRows() (rows []store.OutboxRow, complete bool)
}

// SoonStore is a Store that marks published rows sent in its next write
// transaction, whoever's it is (sqlite.DB.MarkSoon): the relay's own
// MarkSent, when due, then finds them marked and usually needs no
// transaction of its own.
type SoonStore interface {
	MarkSoon(ids []string)
}

// Publisher publishes one message and returns once JetStream acked it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error)
}

// AsyncPublisher is a Publisher that can also put a message on the wire
// without waiting for its ack (bus.Bus is one). The relay then publishes a
// whole batch and awaits the acks together: one round trip per batch
// instead of one per row.
type AsyncPublisher interface {
	Publisher
	PublishMsgAsync(msg *nats.Msg) (jetstream.PubAckFuture, error)
}

// The relay's wait after a failed round doubles from minRetry up to
// maxRetry (each wait jittered down by up to backoff.Spread).
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 5 * time.Second
)

// soonMarkDelay is the default MarkDelay of a relay whose store marks
// published rows in its next commit (SoonStore).
const soonMarkDelay = 250 * time.Millisecond

// ackWait bounds the wait for a batch's acks; a row whose ack does not
// come stays unsent and is published again.
const ackWait = 15 * time.Second

// Relay publishes every unsent outbox row, then marks it sent. It is woken
// right after a commit that emitted events — and then publishes the rows
// that commit handed over (CommittedStore) without reading them back — and
// reads the table at start, after a failure and on its slow poll, the
// safety net for whatever was not handed over. Several relays may run on one outbox: there is no claim and no
// cursor, so a duplicate publish can happen and dies in JetStream's dedupe
// window (Nats-Msg-Id) or in the consumers' inbox; a crash between publish
// and mark-sent republishes, never loses.
//
// Run marks rows sent in bulk: what was acked is remembered (and not
// published again by this relay) and marked sent once MarkDelay has passed
// or a batch has gathered, in one statement — marking is one write
// transaction per round instead of per publish. With a SoonStore the acked
// rows are handed to the store at once and marked by its next commit,
// whoever's it is; Run's own mark then finds them marked and needs no
// transaction. A crash before the mark republishes those rows, as above.
type Relay struct {
	Store  Store
	Pub    Publisher
	Log    *slog.Logger
	Poll   time.Duration                   // safety-net interval; default 1s
	Batch  int                             // rows per round; default 256
	Before func(row store.OutboxRow) error // test hook: fault point before publish
	// Service names the relay's service: to Telemetry, and in its fault
	// point relay.<Service>.after-publish (package fault), hit once rows
	// are published and acked, before they are marked sent.
	Service string
	// MarkDelay is how long Run may hold acked rows before marking them
	// sent; default 20ms (soonMarkDelay with a SoonStore), negative marks
	// after every round.
	MarkDelay time.Duration
	// Telemetry, when set, observes every publish (a span each, a child
	// of the span that emitted the row). Nil is off.
	Telemetry Telemetry
}

// Telemetry observes a relay's publishes (telemetry.Telemetry is one).
// Implementations are safe for concurrent use.
type Telemetry interface {
	// Publishing is called as a row is published; end is called once
	// with JetStream's answer (nil: acked). It must not change msg.
	Publishing(ctx context.Context, service string, msg *nats.Msg) (end func(err error))
}

// publishing starts the telemetry of one publish and, at DEBUG, its log
// line (with the saga's ids, for `prsaga trace`); its end is never nil.
func (r *Relay) publishing(ctx context.Context, msg *nats.Msg) func(err error) {
	var end func(error)
	if r.Telemetry != nil {
		end = r.Telemetry.Publishing(ctx, r.Service, msg)
	}
	debug := r.Log != nil && r.Log.Enabled(ctx, slog.LevelDebug)
	if end == nil && !debug {
		return func(error) {}
	}
	return func(err error) {
		if end != nil {
			end(err)
		}
		if debug {
			h := msg.Header
			args := []any{"event_id", h.Get("ce-id"), "event_type", h.Get("ce-type"), "correlation_id", h.Get("ce-correlationid"),
				"pr_id", h.Get("ce-subject"), "subject", msg.Subject}
			if err != nil {
				r.Log.DebugContext(ctx, "publish failed", append(args, "err", err)...)
				return
			}
			r.Log.DebugContext(ctx, "event published", args...)
		}
	}
}

// acked are rows published and acked, not marked sent yet.
type acked struct {
	ids   []string
	set   map[string]bool
	since time.Time // of the oldest
}

func (a *acked) add(ids []string) {
	if len(ids) == 0 {
		return
	}
	if a.set == nil {
		a.set = map[string]bool{}
	}
	if len(a.ids) == 0 {
		a.since = time.Now()
	}
	for _, id := range ids {
		if !a.set[id] {
			a.set[id] = true
			a.ids = append(a.ids, id)
		}
	}
}

// Run relays until ctx is done. It returns nil on cancellation.
func (r *Relay) Run(ctx context.Context) error {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	delay := r.MarkDelay
	if delay == 0 {
		delay = 20 * time.Millisecond
		if _, ok := r.Store.(SoonStore); ok {
			// The store's next commit marks the rows (a handler's
			// transaction, typically within milliseconds under load): the
			// relay's own mark is only for a quiet store.
			delay = soonMarkDelay
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	if r.Service != "" {
		fault.Register(fault.AfterPublish(r.Service))
	}
	var held acked
	defer func() {
		// Mark what was acked before stopping, so that a clean stop does
		// not republish it.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.mark(mctx, &held); err != nil {
			r.Log.WarnContext(ctx, "outbox relay: marking sent at stop failed; the rows will be published again", "err", err)
		}
	}()
	retry := minRetry
	// read: the next round reads the table (at start, after a failure, on
	// the poll) rather than taking the rows this process just committed.
	read := true
	for {
		n, err := r.roundFrom(ctx, &held, delay, read)
		read = false
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// Jittered, so that relays that failed together (NATS
			// restarting) do not all come back in the same instant.
			wait := backoff.Jitter(retry)
			r.Log.WarnContext(ctx, "outbox relay round failed; will retry", "err", err, "retry_in", wait.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			retry = min(retry*2, maxRetry)
			read = true
			continue
		}
		retry = minRetry
		if n >= r.batch() {
			read = true
			continue // a full batch: there may be more
		}
		var due <-chan time.Time
		if len(held.ids) > 0 {
			due = time.After(max(0, delay-time.Since(held.since)))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Store.Committed():
		case <-t.C:
			read = true
		case <-due:
			if err := r.mark(ctx, &held); err != nil && ctx.Err() == nil {
				r.Log.WarnContext(ctx, "outbox relay: marking sent failed; will retry", "err", err)
			}
		}
	}
}

// Flush publishes one batch of unsent rows and marks the acked ones sent
// (in one statement). It returns how many rows it marked. Rows are
// published in outbox order; with an AsyncPublisher all of them go out
// before the first ack is awaited. A failure stops publishing the rest of
// the batch; what was acked is still marked.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	var held acked
	return r.round(ctx, &held, -1)
}

// round publishes unsent rows not held already and adds the acked ones to
// held; it marks held sent when delay has passed (at once when negative)
// or a batch has gathered. It returns how many rows it published.
func (r *Relay) round(ctx context.Context, held *acked, delay time.Duration) (int, error) {
	return r.roundFrom(ctx, held, delay, true)
}

// roundFrom is round; unless read, it publishes the rows the store
// committed since the last round (CommittedStore) instead of reading the
// table — which it still does when the store cannot hand them over or
// dropped some.
func (r *Relay) roundFrom(ctx context.Context, held *acked, delay time.Duration, read bool) (int, error) {
	batch := r.batch()
	cs, handsOver := r.Store.(CommittedStore)
	var all []store.OutboxRow
	var err error
	if handsOver {
		var complete bool
		all, complete = cs.CommittedRows()
		// Too many to publish in one round: the table has them in order.
		read = read || !complete || len(all) > batch
	}
	if read || !handsOver {
		// The read is short and ends the round's wait for ctx anyway:
		// without a cancelable context the SQLite driver starts no
		// watcher goroutine for it.
		rctx := context.WithoutCancel(ctx)
		if es, ok := r.Store.(ExceptStore); ok && len(held.ids) > 0 {
			all, err = es.UnsentExcept(rctx, batch, held.ids)
		} else {
			all, err = r.Store.Unsent(rctx, batch+len(held.ids))
		}
		if err != nil {
			return 0, err
		}
	}
	rows := all[:0]
	for _, row := range all {
		if !held.set[row.ID] && len(rows) < batch {
			rows = append(rows, row)
		}
	}
	var sent []string
	var pubErr error
	if len(rows) > 0 {
		if ap, ok := r.Pub.(AsyncPublisher); ok {
			sent, pubErr = r.publishAsync(ctx, ap, rows)
		} else {
			sent, pubErr = r.publishSync(ctx, rows)
		}
		held.add(sent)
		if len(sent) > 0 && r.Service != "" && fault.Enabled() {
			if err := fault.Hit(fault.AfterPublish(r.Service)); err != nil {
				// As a crash here would: published, not marked sent;
				// forgotten, so that the rows are published again.
				*held = acked{}
				return 0, err
			}
		}
		if ss, ok := r.Store.(SoonStore); ok && len(sent) > 0 && delay >= 0 {
			ss.MarkSoon(sent)
		}
	}
	if delay < 0 || len(held.ids) >= batch || len(held.ids) > 0 && time.Since(held.since) >= delay {
		if err := r.mark(ctx, held); err != nil {
			return 0, err
		}
	}
	return len(sent), pubErr
}

func (r *Relay) batch() int {
	if r.Batch <= 0 {
		return 256
	}
	return r.Batch
}

// mark marks the held rows sent.
func (r *Relay) mark(ctx context.Context, held *acked) error {
	if len(held.ids) == 0 {
		return nil
	}
	if err := r.Store.MarkSent(ctx, held.ids); err != nil {
		return err
	}
	*held = acked{}
	return nil
}

func (r *Relay) publishSync(ctx context.Context, rows []store.OutboxRow) ([]string, error) {
	sent := make([]string, 0, len(rows))
	for _, row := range rows {
		if r.Before != nil {
			if err := r.Before(row); err != nil {
				return sent, err
			}
		}
		msg := bus.RowMsg(row)
		end := r.publishing(ctx, msg)
		_, err := r.Pub.PublishMsg(ctx, msg)
		end(err)
		if err != nil {
			return sent, err
		}
		sent = append(sent, row.ID)
	}
	return sent, nil
}

func (r *Relay) publishAsync(ctx context.Context, ap AsyncPublisher, rows []store.OutboxRow) ([]string, error) {
	futures := make([]jetstream.PubAckFuture, 0, len(rows))
	ends := make([]func(error), 0, len(rows))
	var pubErr error
	for _, row := range rows {
		if r.Before != nil {
			if pubErr = r.Before(row); pubErr != nil {
				break
			}
		}
		msg := bus.RowMsg(row)
		end := r.publishing(ctx, msg)
		f, err := ap.PublishMsgAsync(msg)
		if err != nil {
			end(err)
			pubErr = err
			break
		}
		futures = append(futures, f)
		ends = append(ends, end)
	}
	sent := make([]string, 0, len(futures))
	timeout := time.NewTimer(ackWait)
	defer timeout.Stop()
	for i, f := range futures {
		select {
		case <-f.Ok():
			sent = append(sent, rows[i].ID)
			ends[i](nil)
		case err := <-f.Err():
			ends[i](err)
			if pubErr == nil {
				pubErr = fmt.Errorf("publish to %s: %w", rows[i].Subject, err)
			}
		case <-timeout.C:
			err := fmt.Errorf("no ack for %d of %d publishes within %s", len(futures)-i, len(futures), ackWait)
			for _, end := range ends[i:] {
				end(err)
			}
			return sent, errors.Join(pubErr, err)
		case <-ctx.Done():
			for _, end := range ends[i:] {
				end(ctx.Err())
			}
			return sent, errors.Join(pubErr, ctx.Err())
		}
	}
	return sent, pubErr
}
