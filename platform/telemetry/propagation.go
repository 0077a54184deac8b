package telemetry

import (
	"context"
	"crypto/sha256"

	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/prsaga/prsaga/contracts"
)

var traceContext = propagation.TraceContext{}

// RunTraceID is the trace id of a saga run whose requested event carried
// no traceparent: derived from the correlation id, so that every service
// that consumes the run's first event joins the same trace.
func RunTraceID(correlationID string) trace.TraceID {
	var id trace.TraceID
	h := sha256.Sum256([]byte("prsaga trace\x00" + correlationID))
	copy(id[:], h[:16])
	return id
}

// runParent is the (never exported) span the spans of such a run hang off.
func runParent(correlationID string, sampled bool) trace.SpanContext {
	h := sha256.Sum256([]byte("prsaga trace\x00" + correlationID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], h[:16])
	copy(sid[:], h[16:24])
	if !sid.IsValid() { // all zero: astronomically unlikely, but invalid
		sid[7] = 1
	}
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

// Parent returns ctx carrying the remote span an event's handling continues:
// the one its traceparent/tracestate name, or — when it carries none (or an
// invalid one) — the run's derived parent (RunTraceID).
func (t *Telemetry) Parent(ctx context.Context, m contracts.Meta) context.Context {
	return t.parent(ctx, m.TraceParent, m.TraceState, m.CorrelationID)
}

func (t *Telemetry) parent(ctx context.Context, traceParent, traceState, correlationID string) context.Context {
	if traceParent != "" {
		c := &traceCarrier{parent: traceParent, state: traceState}
		if pctx := traceContext.Extract(ctx, c); trace.SpanContextFromContext(pctx).IsValid() {
			return pctx
		}
	}
	if correlationID == "" {
		return ctx // a root of its own
	}
	return trace.ContextWithRemoteSpanContext(ctx, runParent(correlationID, t.exporter != nil))
}

// WithSpan returns env with its traceparent/tracestate set to the span in
// ctx (the event itself is copied, never changed in place): every event
// that Follows it is then a child of that span. Without a valid span in
// ctx, env is returned as it is.
func WithSpan(ctx context.Context, env contracts.Envelope) contracts.Envelope {
	if !trace.SpanContextFromContext(ctx).IsValid() || env.Event == nil {
		return env
	}
	c := &traceCarrier{}
	traceContext.Inject(ctx, c)
	tp, ts := c.parent, c.state
	if tp == "" {
		return env
	}
	e := cloneContext(env.Event)
	e.SetExtension(contracts.ExtTraceParent, tp)
	if ts != "" {
		e.SetExtension(contracts.ExtTraceState, ts)
	} else {
		e.SetExtension(contracts.ExtTraceState, nil) // SetExtension with nil removes it
	}
	env.Event = e
	env.Meta.TraceParent, env.Meta.TraceState = tp, ts
	return env
}

// cloneContext copies an event's attributes and extensions; the data,
// never written after decoding, is shared.
func cloneContext(e *event.Event) *event.Event {
	out := *e
	out.Context = e.Context.Clone()
	return &out
}

// headerValue reads a header of a message the relay publishes: an outbox
// row that bus.Encode made, whose names are lower-case (ce-*) as written.
// An exact lookup, then: a missing header (ce-tracestate, mostly) would
// otherwise cost a case-folding scan of every name on every publish.
func headerValue(h map[string][]string, name string) string {
	if vs := h[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}
