package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// The runner's and the relay's hooks.
var _ service.Telemetry = (*telemetry.Telemetry)(nil)

func newTelemetry(t *testing.T, exp sdktrace.SpanExporter) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.New(context.Background(), telemetry.Config{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func requested(t testing.TB, traceParent string) contracts.Envelope {
	t.Helper()
	r := storetest.Request()
	return contractstest.Envelope(t, "req-1", contracts.TypeMergeRequested, "https://forge.example/acme", r.PRID, time.Now(), r,
		contracts.Meta{CorrelationID: "req-1", Attempt: 1, TraceParent: traceParent})
}

func spanOf(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %d", name, len(exp.GetSpans()))
	return tracetest.SpanStub{}
}

func serviceOf(s tracetest.SpanStub) string {
	for _, kv := range s.Resource.Attributes() {
		if kv.Key == "service.name" {
			return kv.Value.AsString()
		}
	}
	return ""
}

// A handler's span is a child of the event's traceparent; the envelope it
// gets names that span, so what it emits (contracts.Follow) is the span's
// child; the received event itself is not changed.
func TestHandlingContinuesTheEventsTraceAndHandsOnItsSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := newTelemetry(t, exp)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	in := requested(t, tp)
	ctx, env, done := tel.Handling(context.Background(), "validator", "validator", in, 1)
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("span trace %s, want the event's", sc.TraceID())
	}
	out, err := contracts.Follow(env.Event, "val-1", contracts.TypeMergeValidated, "validator", time.Now(),
		contracts.Validated{Request: env.Req()})
	if err != nil {
		t.Fatal(err)
	}
	done("acked", nil)

	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := out.Extensions()[contracts.ExtTraceParent]; got != want {
		t.Errorf("emitted traceparent %v, want the handling span %s", got, want)
	}
	if got := in.Event.Extensions()[contracts.ExtTraceParent]; got != tp {
		t.Errorf("the received event was changed: traceparent %v", got)
	}
	if env.Meta.TraceParent != want || in.Meta.TraceParent != tp {
		t.Errorf("meta traceparent: handed %q, received %q", env.Meta.TraceParent, in.Meta.TraceParent)
	}
	s := spanOf(t, exp, "process prsaga.merge.requested")
	if s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Errorf("span parent %v, want the remote 00f067aa0ba902b7", s.Parent)
	}
	if s.SpanKind != trace.SpanKindConsumer || serviceOf(s) != "validator" {
		t.Errorf("span kind %v service %q", s.SpanKind, serviceOf(s))
	}
}

// Two services consuming a request that carries no traceparent land in
// one trace, derived from the correlation id.
func TestEventsWithoutTraceParentJoinTheRunsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := newTelemetry(t, exp)
	in := requested(t, "")
	var ids []trace.TraceID
	for _, svc := range []string{"validator", "ledger"} {
		ctx, _, done := tel.Handling(context.Background(), svc, svc, in, 1)
		ids = append(ids, trace.SpanContextFromContext(ctx).TraceID())
		done("acked", nil)
	}
	if ids[0] != ids[1] || ids[0] != telemetry.RunTraceID("req-1") {
		t.Errorf("trace ids %v, want both %v", ids, telemetry.RunTraceID("req-1"))
	}
	// A broken traceparent is treated as none.
	ctx, _, done := tel.Handling(context.Background(), "merger", "merger", requested(t, "00-zz-yy-01"), 1)
	done("acked", nil)
	if got := trace.SpanContextFromContext(ctx).TraceID(); got != telemetry.RunTraceID("req-1") {
		t.Errorf("invalid traceparent: trace %v", got)
	}
}

// The relay's publish span is a child of the span that emitted the row.
func TestPublishingIsAChildOfTheEmittingSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := newTelemetry(t, exp)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	msg, err := bus.Encode("prsaga.merge.requested", requested(t, tp).Event)
	if err != nil {
		t.Fatal(err)
	}
	before := msg.Header.Get("ce-traceparent")
	end := tel.Publishing(context.Background(), "ledger", msg)
	end(errors.New("no ack"))
	s := spanOf(t, exp, "send prsaga.merge.requested")
	if s.Parent.SpanID().String() != "00f067aa0ba902b7" || s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("publish span parent %v trace %v", s.Parent.SpanID(), s.SpanContext.TraceID())
	}
	if s.SpanKind != trace.SpanKindProducer || s.Status.Description != "no ack" {
		t.Errorf("publish span kind %v status %+v", s.SpanKind, s.Status)
	}
	if msg.Header.Get("ce-traceparent") != before {
		t.Error("publishing changed the message")
	}
}

// Without an exporter nothing is recorded, yet trace context propagates.
func TestWithoutExporterContextStillPropagates(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if tel.Exporting() {
		t.Fatal("exporting without an exporter")
	}
	ctx, env, done := tel.Handling(context.Background(), "merger", "merger", requested(t, ""), 1)
	defer done("acked", nil)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		t.Error("span is recorded with nowhere to export it")
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.TraceID() != telemetry.RunTraceID("req-1") {
		t.Fatalf("span context %v, want valid in the run's trace", sc)
	}
	if !strings.HasPrefix(env.Meta.TraceParent, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()) {
		t.Errorf("handed traceparent %q does not name the span", env.Meta.TraceParent)
	}
}

func TestMetricsCountAndServeFromTheirOwnRegistry(t *testing.T) {
	a := newTelemetry(t, nil)
	b := newTelemetry(t, nil) // a second registry: no duplicate-registration panic
	env := requested(t, "")
	_, _, done := a.Handling(context.Background(), "validator", "validator", env, 3)
	done("retry", errors.New("boom"))
	a.DeadLettered("merger")
	a.Transition("", contracts.StateValidating)
	a.Transition(contracts.StateValidating, contracts.StateMergeFailed)
	a.MergeFailed(contracts.StateValidating, contracts.CodeChecksFailed)
	a.StepDuration(contracts.StateValidating, 30*time.Millisecond)
	a.WatchdogTimeout(contracts.StateMerging)
	a.Publishing(context.Background(), "ledger", &nats.Msg{Subject: "prsaga.merge.requested", Header: nats.Header{}})(nil)
	a.WatchOutbox("merger", func(context.Context) (int, time.Duration, error) { return 3, 1500 * time.Millisecond, nil })
	a.WatchOutbox("notifier", func(context.Context) (int, time.Duration, error) { return 0, 0, errors.New("closed") })
	a.WatchSagas(func(context.Context) (map[contracts.State]telemetry.StateCount, error) {
		return map[contracts.State]telemetry.StateCount{contracts.StateMerging: {Sagas: 2, Oldest: time.Now().Add(-time.Minute)}}, nil
	})

	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	var text string
	for range 2 { // a failed read is counted in the scrape after it
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(body)
	}
	for _, want := range []string{
		`prsaga_consumer_redeliveries_total{consumer="validator"} 1`,
		`prsaga_consumer_redeliveries_total{consumer="merger"} 0`,
		`prsaga_dlq_messages_total{consumer="merger"} 1`,
		`prsaga_saga_transitions_total{from="none",to="VALIDATING"} 1`,
		`prsaga_saga_transitions_total{from="VALIDATING",to="MERGE_FAILED"} 1`,
		`prsaga_saga_merge_failed_total{code="checks_failed",step="VALIDATING"} 1`,
		`prsaga_step_duration_seconds_bucket{step="VALIDATING",le="0.05"} 1`,
		`prsaga_step_duration_seconds_count{step="VALIDATING"} 1`,
		`prsaga_watchdog_timeouts_total{step="MERGING"} 1`,
		`prsaga_watchdog_timeouts_total{step="INDEXING"} 0`,
		`prsaga_events_handled_total{consumer="validator",outcome="retry"} 1`,
		`prsaga_events_published_total{result="ok",service="ledger"} 1`,
		`prsaga_outbox_pending{service="merger"} 3`,
		`prsaga_outbox_oldest_age_seconds{service="merger"} 1.5`,
		`prsaga_sagas_in_flight{state="MERGING"} 2`,
		`prsaga_sagas_in_flight{state="VALIDATING"} 0`,
		`prsaga_metrics_read_errors_total{what="outbox"} `, // 1 or 2: collectors run concurrently
		`go_goroutines `,
	} {
		if !strings.Contains(text, want+"\n") && !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, `prsaga_outbox_pending{service="notifier"}`) {
		t.Error("an outbox that could not be read still reported a value")
	}
	b.DeadLettered("merger")
	if a.Registry == b.Registry {
		t.Fatal("two telemetries share a registry")
	}

	a.Pruned("ledger", "inbox", 3)
	a.StoreSizes("ledger", map[string]int64{"inbox_rows": 7, "file_bytes": 4096})

	// Every name MetricNames promises is registered with the labels
	// MetricLabels says (and nothing else of ours).
	fams, err := a.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "prsaga_") {
			continue
		}
		got = append(got, f.GetName())
		want := telemetry.MetricLabels(f.GetName())
		if telemetry.IsHistogram(f.GetName()) != (f.GetType().String() == "HISTOGRAM") {
			t.Errorf("%s: type %v, IsHistogram %v", f.GetName(), f.GetType(), telemetry.IsHistogram(f.GetName()))
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			slices.Sort(labels)
			slices.Sort(want)
			if !slices.Equal(labels, want) {
				t.Errorf("%s labels %v, MetricLabels %v", f.GetName(), labels, want)
			}
		}
	}
	if want := telemetry.MetricNames(); !slices.Equal(got, want) {
		t.Errorf("registered %v\nMetricNames %v", got, want)
	}
}
