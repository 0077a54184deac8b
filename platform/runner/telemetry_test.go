package runner_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// observed wraps the real telemetry and writes down what the runner told
// it: deliveries and outcomes per event, dead letters per consumer, and
// the span context each handler ran under.
type observed struct {
	*telemetry.Telemetry
	exp *tracetest.InMemoryExporter

	mu         sync.Mutex
	deliveries map[string][]int
	outcomes   map[string][]string
	dead       map[string]int
}

func newObserved(t *testing.T) *observed {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Config{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return &observed{Telemetry: tel, exp: exp, deliveries: map[string][]int{}, outcomes: map[string][]string{}, dead: map[string]int{}}
}

func (o *observed) Handling(ctx context.Context, service, consumer string, env contracts.Envelope, delivery int) (context.Context, contracts.Envelope, func(string, error)) {
	ctx, env, end := o.Telemetry.Handling(ctx, service, consumer, env, delivery)
	id := env.Event.ID()
	o.mu.Lock()
	o.deliveries[id] = append(o.deliveries[id], delivery)
	o.mu.Unlock()
	return ctx, env, func(outcome string, err error) {
		// End the span first: tests wait for the outcome, then read spans.
		end(outcome, err)
		o.mu.Lock()
		o.outcomes[id] = append(o.outcomes[id], outcome)
		o.mu.Unlock()
	}
}

func (o *observed) DeadLettered(consumer string) {
	o.mu.Lock()
	o.dead[consumer]++
	o.mu.Unlock()
	o.Telemetry.DeadLettered(consumer)
}

func (o *observed) outcomesOf(id string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.outcomes[id])
}

func withTelemetry(o *observed) func(cfg *runner.Config) {
	return func(cfg *runner.Config) { cfg.Telemetry = o }
}

// The handler runs in its span, and the event it emits names that span
// as its parent: a saga's trace chains from step to step.
func TestTelemetrySpanIsTheParentOfWhatTheHandlerEmits(t *testing.T) {
	o := newObserved(t)
	var seen atomic.Value
	h := start(t, setup{tune: withTelemetry(o), effect: func(ctx context.Context, env contracts.Envelope) error {
		seen.Store(trace.SpanContextFromContext(ctx))
		return nil
	}})
	h.settled(h.publish(requested(t, "req-1", validRequest())))
	h.waitFor("the span to end", func() bool { return len(o.outcomesOf("req-1")) == 1 })

	spans := o.exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "process prsaga.merge.requested" {
		t.Fatalf("spans %v, want one process span", spans)
	}
	span := spans[0].SpanContext
	if got := seen.Load().(trace.SpanContext); !got.Equal(span) {
		t.Errorf("handler ran under %v, want the span %v", got, span)
	}
	out := h.outgoing(contracts.SubjectMergeValidated)[0]
	want := "00-" + span.TraceID().String() + "-" + span.SpanID().String() + "-01"
	if got := out.Extensions()[contracts.ExtTraceParent]; got != want {
		t.Errorf("emitted traceparent %v, want %s", got, want)
	}
	if got := o.outcomesOf("req-1"); !slices.Equal(got, []string{runner.OutcomeAcked}) {
		t.Errorf("outcomes %v", got)
	}
}

// Every way a message is settled is reported once, with its delivery.
func TestTelemetryReportsEveryOutcome(t *testing.T) {
	t.Run("retry then ack", func(t *testing.T) {
		o := newObserved(t)
		var n atomic.Int64
		h := start(t, setup{tune: withTelemetry(o), effect: func(context.Context, contracts.Envelope) error {
			if n.Add(1) == 1 {
				return errTransient
			}
			return nil
		}})
		h.settled(h.publish(requested(t, "req-1", validRequest())))
		h.waitFor("two outcomes", func() bool { return len(o.outcomesOf("req-1")) == 2 })
		if got := o.outcomesOf("req-1"); !slices.Equal(got, []string{runner.OutcomeRetry, runner.OutcomeAcked}) {
			t.Errorf("outcomes %v, want retry, acked", got)
		}
		if got := o.deliveries["req-1"]; !slices.Equal(got, []int{1, 2}) {
			t.Errorf("deliveries %v, want 1, 2", got)
		}
		if got := o.exp.GetSpans()[0]; got.Status.Description != errTransient.Error() {
			t.Errorf("the failed handling's span status %+v, want the error", got.Status)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		o := newObserved(t)
		h := start(t, setup{tune: withTelemetry(o), workers: 1})
		e := requested(t, "req-1", validRequest())
		h.publishAs(e, "copy-1")
		h.settled(h.publishAs(e, "copy-2"))
		h.waitFor("two outcomes", func() bool { return len(o.outcomesOf("req-1")) == 2 })
		if got := o.outcomesOf("req-1"); !slices.Equal(got, []string{runner.OutcomeAcked, runner.OutcomeDuplicate}) {
			t.Errorf("outcomes %v, want acked, duplicate", got)
		}
	})
	t.Run("gave up", func(t *testing.T) {
		o := newObserved(t)
		h := start(t, setup{tune: withTelemetry(o), bus: bus.Config{MaxDeliver: 2}, giveUp: true, step: contracts.StateValidating,
			effect: func(context.Context, contracts.Envelope) error { return errTransient }})
		h.settled(h.publish(requested(t, "req-1", validRequest())))
		h.waitFor("two outcomes", func() bool { return len(o.outcomesOf("req-1")) == 2 })
		if got := o.outcomesOf("req-1"); !slices.Equal(got, []string{runner.OutcomeRetry, runner.OutcomeGaveUp}) {
			t.Errorf("outcomes %v, want retry, gave_up", got)
		}
	})
	t.Run("crash after commit", func(t *testing.T) {
		o := newObserved(t)
		var faults atomic.Int64
		h := start(t, setup{tune: withTelemetry(o), bus: bus.Config{AckWait: 500 * time.Millisecond},
			fault: func(point string, env contracts.Envelope) error {
				if point == runner.FaultAfterCommit && faults.Add(1) == 1 {
					return errors.New("crash after commit")
				}
				return nil
			}})
		h.publish(requested(t, "req-1", validRequest()))
		h.waitFor("two outcomes", func() bool { return len(o.outcomesOf("req-1")) == 2 })
		if got := o.outcomesOf("req-1"); !slices.Equal(got, []string{runner.OutcomeCrashed, runner.OutcomeDuplicate}) {
			t.Errorf("outcomes %v, want crashed, duplicate", got)
		}
	})
	t.Run("dead letter", func(t *testing.T) {
		o := newObserved(t)
		h := start(t, setup{tune: withTelemetry(o)})
		if _, err := h.b.JS.Publish(h.ctx(), contracts.SubjectMergeRequested, []byte("garbage")); err != nil {
			t.Fatal(err)
		}
		h.settled(h.publish(requested(t, "req-ok", validRequest())))
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.dead[contracts.ConsumerValidator] != 1 || len(o.deliveries) != 1 {
			t.Errorf("dead letters %v, handled %v: want one of each", o.dead, o.deliveries)
		}
	})
}
