package ledger

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
)

// Projector applies saga events to the projection with contracts.Decide.
// It holds no state of its own and is safe for concurrent use; concurrency
// between writers is settled by the store's conditional writes.
type Projector struct {
	// Now stamps rows, transitions, records and announcements; default time.Now.
	Now func() time.Time
	// Metrics, when set, is told what each committed decision did.
	Metrics Metrics
}

// Result says what Project did with one event.
type Result struct {
	// Duplicate: saga_event already held the event (a redelivery, or another
	// ledger instance won the race). Nothing was written.
	Duplicate bool
	// Status is StatusApplied or StatusIgnored (empty for a duplicate).
	Status string
	// Reason is why the event was ignored, or a summary of what it did.
	Reason string
	// Row is the saga after the event (as read when nothing was applied).
	Row contracts.Row
	// Transitions are the recorded transitions, with Seq set.
	Transitions []Transition
}

// Project applies one opened event within tx (design §4): it reads the row,
// lets contracts.Decide rule, and writes the decision — one conditional
// write of the row, its transitions, the saga_event record and one
// prsaga.saga.state_changed.v1 per transition in the outbox. An ignored
// event is recorded with the state machine's reason. An event already
// recorded is a duplicate and changes nothing.
//
// A requested event whose non-identity fields are invalid is projected like
// any other: the validator answers it with invalid_request.
//
// After commit, Project logs one "saga_transition" line per transition
// through log, which must already carry the event's ids as
// logging.ForEvent adds them (pr_id, correlation_id, event_id, attempt —
// the runner's handler logger does); Project adds the transition's fields.
//
// ErrConflict (wrapped) means another writer moved the row since it was
// read: roll back and handle the event again.
func (p *Projector) Project(ctx context.Context, tx Tx, env contracts.Envelope, log *slog.Logger) (Result, error) {
	id := env.Event.ID()
	prID := env.Req().PRID
	seen, row, err := readFirst(tx, id, prID)
	if err != nil {
		return Result{}, err
	}
	if seen {
		return Result{Duplicate: true}, nil
	}
	in := contracts.IncomingOf(env)
	now := p.now()
	at := eventAt(ctx, now)
	in.Time = at
	d, err := contracts.Project(row, in, func() ([]contracts.Incoming, error) { return runEvents(tx, row.PRID, in) })
	if err != nil {
		return Result{}, err
	}
	raw, err := structured(env.Event)
	if err != nil {
		return Result{}, fmt.Errorf("encode event %s: %w", id, err)
	}
	rec := Event{
		EventID:       id,
		PRID:          prID,
		CorrelationID: env.Meta.CorrelationID,
		Type:          env.Event.Type(),
		ReceivedAt:    now,
		StoredAt:      at,
		Event:         raw,
	}
	if !d.Applied() {
		rec.Status, rec.Reason = StatusIgnored, d.Ignored
		if env.Meta.ReplayOf != "" {
			rec.Reason = fmt.Sprintf("replay of %s sent by a retry, which moved the row itself: %s", env.Meta.ReplayOf, d.Ignored)
		}
		if err := tx.RecordEvent(rec); err != nil {
			return Result{}, err
		}
		tx.AfterCommit(func() {
			log.DebugContext(ctx, "saga_event_ignored", "reason", rec.Reason)
		})
		return Result{Status: StatusIgnored, Reason: rec.Reason, Row: row}, nil
	}

	next := d.Row
	next.UpdatedAt = now
	if !row.Exists {
		next.CreatedAt = now
	}
	if err := tx.SaveSaga(row, next); err != nil {
		return Result{}, fmt.Errorf("save saga %s: %w", prID, err)
	}
	next.Version = row.Version + 1

	var ts []Transition
	for _, t := range d.Transitions {
		ts = append(ts, Transition{
			CorrelationID: next.CorrelationID,
			From:          t.From,
			To:            t.To,
			Reason:        t.Reason,
			EventID:       id,
			Inferred:      t.Inferred,
			Actor:         env.Event.Source(),
			At:            at,
		})
	}
	if len(ts) > 0 {
		if ts, err = tx.AddTransitions(prID, ts); err != nil {
			return Result{}, err
		}
	}
	rec.Status, rec.Reason = StatusApplied, summary(ts)
	if err := tx.RecordEvent(rec); err != nil {
		return Result{}, err
	}
	if err := announce(tx, env, next, ts, now); err != nil {
		return Result{}, err
	}
	logTransitions(ctx, tx, log, next, ts)
	observe(tx, p.Metrics, env, row, next, ts, now)
	return Result{Status: StatusApplied, Reason: rec.Reason, Row: next, Transitions: ts}, nil
}

// readFirst reads whether the event is recorded and, unless it is, the
// PR's row: in one query when tx can (FirstReader).
func readFirst(tx Tx, eventID, prID string) (recorded bool, row contracts.Row, err error) {
	if fr, ok := tx.(FirstReader); ok {
		return fr.EventAndSaga(eventID, prID)
	}
	if recorded, err = tx.EventRecorded(eventID); err != nil || recorded {
		return recorded, contracts.Row{}, err
	}
	row, err = tx.Saga(prID)
	return false, row, err
}

// eventAt is the time an event's transitions carry: when JetStream stored
// its message (step.StoredAt: the server's clock, which no publisher sets —
// unlike the event's time attribute, which a client chooses for its
// request), or now when it did not come from the stream or the stream's
// clock is ahead of the ledger's. Projected live, that is a moment before
// now; projected again when a restored ledger catches up from the stream,
// it is still the time the event happened, not the time of the catch-up.
// Microseconds, as stored.
func eventAt(ctx context.Context, now time.Time) time.Time {
	at, ok := step.StoredAt(ctx)
	if !ok || at.After(now) {
		return now
	}
	return at.UTC().Truncate(time.Microsecond)
}

func (p *Projector) now() time.Time {
	if p.Now == nil {
		return time.Now().UTC()
	}
	return p.Now().UTC()
}

// summary describes an applied event's effect for saga_event.reason.
func summary(ts []Transition) string {
	if len(ts) == 0 {
		return "filled in merge_sha; the saga had already moved past this step"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		from := string(t.From)
		if from == "" {
			from = "(new)"
		}
		parts[i] = from + " -> " + string(t.To)
		if t.Inferred {
			parts[i] += " (inferred)"
		}
	}
	return strings.Join(parts, ", ")
}

// structured is the event in structured JSON form, as saga_event keeps
// it. It calls the SDK's writer directly: json.Marshal runs the same
// writer and then scans the output again to compact and HTML-escape it
// (4-13% of a projection in profiles). The event was opened (contracts.Open), so
// its data is valid JSON, which the writer copies as it is.
func structured(e *event.Event) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(e.Data()) + 512)
	if err := event.WriteJson(e, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// runEvents are the PR's recorded events and in, to settle the row from
// (contracts.Project): which run owns it, and that run's outcome. A recorded
// event that no longer opens (recorded before a rule of the contract
// tightened) is left out: it would not be accepted today. Each event stands
// at the time the stream stored it (Event.StoredAt; in's is eventAt's), so
// runs are ordered as the bus — and the validator, which takes requests in
// stream order — saw them, never by a request's time attribute, which its
// client chooses.
func runEvents(tx Tx, prID string, in contracts.Incoming) ([]contracts.Incoming, error) {
	recs, err := tx.EventsOf(prID)
	if err != nil {
		return nil, err
	}
	ins := make([]contracts.Incoming, 0, len(recs)+1)
	for _, r := range recs {
		ce, err := r.CloudEvent()
		if err != nil {
			continue
		}
		env, err := contracts.Open(ce)
		if err != nil {
			continue
		}
		rin := contracts.IncomingOf(env)
		rin.Time = r.StoredAt
		ins = append(ins, rin)
	}
	return append(ins, in), nil
}
