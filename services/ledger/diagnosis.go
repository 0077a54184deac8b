package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Evidence is what the ledger's store can tell about a run outside a
// transaction: the watchdog's sources for a diagnosis.
type Evidence interface {
	// LatestEvent returns the most recently received saga_event of a run
	// with the given type.
	LatestEvent(ctx context.Context, correlationID, eventType string) (Event, bool, error)
	// LastTransition returns the PR's most recent transition.
	LastTransition(ctx context.Context, prID string) (Transition, bool, error)
	// OutboxStatus says whether the ledger's outbox holds an event and
	// whether its relay has published it.
	OutboxStatus(ctx context.Context, eventID string) (held, sent bool, err error)
}

// diagnosis is what the watchdog could tell about a stuck step.
type diagnosis struct {
	text        string
	lastEventID string
	request     contracts.Request // carried forward into timed_out
	meta        contracts.Meta    // of the trigger: client ref and trace context
}

// diagnose asks, best effort, why the row's step has not answered: was its
// trigger event published, is it waiting on the step's consumer, did the
// consumer dead-letter or give up on messages.
func (w *Watchdog) diagnose(ctx context.Context, row contracts.Row) diagnosis {
	ctx, cancel := context.WithTimeout(ctx, 3*probeTimeout)
	defer cancel()
	step := row.State
	repo, n, _ := contracts.ParsePRID(row.PRID)
	d := diagnosis{request: contracts.Request{PRID: row.PRID, Repo: repo, PRNumber: n}}
	var parts []string
	parts = append(parts, w.triggerState(ctx, row, &d))

	consumer := stepConsumers[step]
	if b, err := w.Bus.Backlog(ctx, consumer); err != nil {
		parts = append(parts, fmt.Sprintf("consumer %s: unknown (%s)", consumer, oneLine(err.Error())))
	} else {
		s := fmt.Sprintf("consumer %s: %d pending, %d delivered and not acknowledged", consumer, b.Pending, b.AckPending)
		if b.Redelivered > 0 {
			s += fmt.Sprintf(" (%d redelivered)", b.Redelivered)
		}
		if b.GaveUp > 0 {
			s += fmt.Sprintf(", gave up on %d after max deliveries", b.GaveUp)
		}
		parts = append(parts, s)
	}
	if n, err := w.Bus.DeadLetters(ctx, consumer); err != nil {
		parts = append(parts, fmt.Sprintf("%s: unknown (%s)", contracts.DLQSubject(consumer), oneLine(err.Error())))
	} else {
		parts = append(parts, fmt.Sprintf("%s holds %d messages", contracts.DLQSubject(consumer), n))
	}
	d.text = contracts.FitReason(strings.Join(parts, "; "))
	return d
}

// triggerState says whether the trigger of the row's current attempt was
// published. The ledger consumes every saga event, so a trigger in
// saga_event was on the bus; a retry's replay may still sit in the outbox.
func (w *Watchdog) triggerState(ctx context.Context, row contracts.Row, d *diagnosis) string {
	typ := contracts.TriggerType(row.State)
	short := strings.TrimSuffix(strings.TrimPrefix(typ, "prsaga.merge."), ".v1")
	e, found, err := w.Store.LatestEvent(ctx, row.CorrelationID, typ)
	if err != nil {
		return fmt.Sprintf("trigger %s: unknown (%s)", short, oneLine(err.Error()))
	}
	if found {
		if ce, err := e.CloudEvent(); err == nil {
			if env, err := contracts.Open(ce); err == nil {
				d.request, d.meta = env.Req(), env.Meta
			}
		}
		d.lastEventID = e.EventID
		if d.meta.Attempt >= row.Attempts {
			return fmt.Sprintf("trigger %s %s (attempt %d) was published: the ledger saw it at %s",
				short, e.EventID, d.meta.Attempt, e.ReceivedAt.UTC().Format(time.RFC3339))
		}
	}
	t, ok, err := w.Store.LastTransition(ctx, row.PRID)
	if err != nil || !ok || t.From != contracts.StateMergeFailed || t.EventID == "" {
		return fmt.Sprintf("trigger %s of attempt %d was not seen on the bus", short, row.Attempts)
	}
	// The row's last move was a retry: its replay is the trigger.
	d.lastEventID = t.EventID
	held, sent, err := w.Store.OutboxStatus(ctx, t.EventID)
	switch {
	case err != nil:
		return fmt.Sprintf("replayed trigger %s %s: unknown (%s)", short, t.EventID, oneLine(err.Error()))
	case held && !sent:
		return fmt.Sprintf("replayed trigger %s %s is still in the ledger's outbox: not published (is the relay running?)", short, t.EventID)
	case held:
		return fmt.Sprintf("replayed trigger %s %s was published but not seen on the bus yet", short, t.EventID)
	}
	return fmt.Sprintf("replayed trigger %s %s is neither in the ledger's outbox nor seen on the bus", short, t.EventID)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
