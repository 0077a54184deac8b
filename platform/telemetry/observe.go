package telemetry

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/prsaga/prsaga/contracts"
)

// Handling starts the span of one service handling one event — a child of
// the span the event's traceparent names — and counts a redelivery. It
// returns the context for the handler, the envelope to hand it (whose
// traceparent is the new span: see WithSpan) and the function that ends
// the span with the outcome (runner.Outcome*), which must be called
// exactly once.
// delivery is JetStream's delivery count (1 for the first).
func (t *Telemetry) Handling(ctx context.Context, service, consumer string, env contracts.Envelope, delivery int) (context.Context, contracts.Envelope, func(outcome string, err error)) {
	start := time.Now()
	if delivery > 1 {
		t.m.redeliveries.WithLabelValues(consumer).Inc()
	}
	subject := env.Route.Subject
	ctx, span := t.Tracer(service).Start(t.Parent(ctx, env.Meta), "process "+subject, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(subject),
			semconv.MessagingConsumerGroupName(consumer),
			semconv.MessagingMessageID(env.Event.ID()),
			semconv.CloudEventsEventID(env.Event.ID()),
			semconv.CloudEventsEventType(env.Event.Type()),
			semconv.CloudEventsEventSource(env.Event.Source()),
			semconv.CloudEventsEventSubject(env.Event.Subject()),
			attribute.String("prsaga.correlation_id", env.Meta.CorrelationID),
			attribute.String("prsaga.causation_id", env.Meta.CausationID),
			attribute.String("prsaga.pr_id", env.Event.Subject()),
			attribute.Int("prsaga.attempt", env.Meta.Attempt),
			attribute.Int("prsaga.delivery", delivery),
		)
	}
	env = WithSpan(ctx, env)
	return ctx, env, func(outcome string, err error) {
		t.m.handled.WithLabelValues(consumer, outcome).Inc()
		t.m.handleTime.WithLabelValues(consumer).Observe(time.Since(start).Seconds())
		if span.IsRecording() {
			span.SetAttributes(attribute.String("prsaga.outcome", outcome))
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		span.End()
	}
}

// DeadLettered counts a message a consumer moved to its dead-letter
// subject.
func (t *Telemetry) DeadLettered(consumer string) {
	t.m.dlq.WithLabelValues(consumer).Inc()
}

// Publishing starts the span of a service's relay publishing one outbox
// row — a child of the span that emitted the event (its ce-traceparent
// header) — and returns the function that ends it once JetStream answered
// (nil: acked). The message is not changed: its traceparent stays the
// emitting handler's, so consumers' spans are that handler's children too.
func (t *Telemetry) Publishing(ctx context.Context, service string, msg *nats.Msg) func(err error) {
	h := map[string][]string(msg.Header)
	pctx := t.parent(ctx, headerValue(h, "ce-"+contracts.ExtTraceParent), headerValue(h, "ce-"+contracts.ExtTraceState),
		headerValue(h, "ce-"+contracts.ExtCorrelationID))
	_, span := t.Tracer(service).Start(pctx, "send "+msg.Subject, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"),
			semconv.MessagingDestinationName(msg.Subject),
			semconv.MessagingMessageID(headerValue(h, "ce-id")),
			semconv.CloudEventsEventType(headerValue(h, "ce-type")),
			attribute.String("prsaga.correlation_id", headerValue(h, "ce-"+contracts.ExtCorrelationID)),
			attribute.String("prsaga.pr_id", headerValue(h, "ce-subject")),
		)
	}
	return func(err error) {
		result := "ok"
		if err != nil {
			result = "error"
			if span.IsRecording() {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		t.m.published.WithLabelValues(service, result).Inc()
		span.End()
	}
}

// Transition counts one saga transition the ledger applied.
func (t *Telemetry) Transition(from, to contracts.State) {
	f := string(from)
	if f == "" {
		f = "none"
	}
	t.m.transitions.WithLabelValues(f, string(to)).Inc()
}

// MergeFailed counts a saga moved to MERGE_FAILED at step with code.
func (t *Telemetry) MergeFailed(step contracts.State, code string) {
	if code == "" {
		code = "unknown"
	}
	t.m.mergeFailed.WithLabelValues(string(step), code).Inc()
}

// StepDuration observes how long a saga spent in step.
func (t *Telemetry) StepDuration(step contracts.State, d time.Duration) {
	t.m.stepDuration.WithLabelValues(string(step)).Observe(max(0, d.Seconds()))
}

// WatchdogTimeout counts a saga the watchdog moved out of step.
func (t *Telemetry) WatchdogTimeout(step contracts.State) {
	t.m.timeouts.WithLabelValues(string(step)).Inc()
}

// Pruned counts rows retention removed from a service's table.
func (t *Telemetry) Pruned(service, table string, rows int64) {
	t.m.pruned.WithLabelValues(service, table).Add(float64(rows))
}

// StoreSizes records a service's store sizes after a pruning round.
func (t *Telemetry) StoreSizes(service string, sizes map[string]int64) {
	for what, n := range sizes {
		t.m.storeSize.WithLabelValues(service, what).Set(float64(n))
	}
}

// WatchOutbox reads service's outbox on every scrape (replacing an earlier
// reader for the same service).
func (t *Telemetry) WatchOutbox(service string, stats OutboxStats) {
	t.m.gauges.mu.Lock()
	defer t.m.gauges.mu.Unlock()
	if t.m.gauges.outbox == nil {
		t.m.gauges.outbox = map[string]OutboxStats{}
	}
	t.m.gauges.outbox[service] = stats
}

// WatchSagas reads the ledger's sagas per state on every scrape.
func (t *Telemetry) WatchSagas(states SagaStates) {
	t.m.gauges.mu.Lock()
	defer t.m.gauges.mu.Unlock()
	t.m.gauges.sagas = states
}
