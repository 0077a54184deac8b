package runner

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
)

// Telemetry observes a runner for metrics and traces (telemetry.Telemetry
// is one). Implementations are safe for concurrent use. Config.Telemetry
// nil turns it off.
type Telemetry interface {
	// Handling is called for every message opened for handling, with
	// JetStream's delivery count (1 for the first delivery). It returns
	// the context and the envelope to handle the message with — the
	// handling span in the context, and the envelope's traceparent naming
	// that span, so that what the handler emits with contracts.Follow is
	// its child — and end, which the runner calls exactly once, when the
	// message is settled, with an Outcome* and the error of a retry.
	Handling(ctx context.Context, service, consumer string, env contracts.Envelope, delivery int) (context.Context, contracts.Envelope, func(outcome string, err error))
	// DeadLettered counts a message the consumer moved to its dead-letter
	// subject.
	DeadLettered(consumer string)
}

// How a handled message was settled (Telemetry's outcome).
const (
	OutcomeAcked     = "acked"     // committed and acknowledged
	OutcomeDuplicate = "duplicate" // the inbox had it: acknowledged, nothing done
	OutcomeSkipped   = "skipped"   // Config.Skip: acknowledged, nothing done
	OutcomeRetry     = "retry"     // failed: Nak'ed with backoff
	OutcomeGaveUp    = "gave_up"   // last delivery: step_failed(retries_exhausted) committed instead
	OutcomeCrashed   = "crashed"   // a test fault stopped it between commit and ack
)

// observe starts the unit's telemetry: its context and envelope become
// the handling span's.
func (r *Runner) observe(ctx context.Context, u *unit) {
	u.ctx = ctx
	if r.cfg.Telemetry == nil {
		return
	}
	delivery := 1
	if md, err := u.m.Metadata(); err == nil {
		delivery = int(md.NumDelivered)
	}
	u.ctx, u.env, u.end = r.cfg.Telemetry.Handling(ctx, r.cfg.Service, r.cfg.Consumer.Durable, u.env, delivery)
}

// finish ends the unit's telemetry with how it was settled; later calls
// do nothing.
func (u *unit) finish(outcome string, err error) {
	if u.end != nil {
		u.end(outcome, err)
		u.end = nil
	}
}

// msgIDs are the saga ids a message's ce-* headers name, for the log line
// of a message that could not be opened: what can be had of them.
func msgIDs(m jetstream.Msg) []any {
	var out []any
	for _, h := range []struct{ header, key string }{
		{"ce-id", "event_id"},
		{"ce-type", "event_type"},
		{"ce-" + contracts.ExtCorrelationID, "correlation_id"},
		{"ce-subject", "pr_id"},
	} {
		for k, vs := range m.Headers() {
			if len(vs) > 0 && strings.EqualFold(k, h.header) {
				v := vs[0]
				if len(v) > 200 {
					v = v[:200] + "…"
				}
				out = append(out, h.key, v)
				break
			}
		}
	}
	return out
}
