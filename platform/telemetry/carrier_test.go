package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The trace context read from and written to an event's extensions through
// traceCarrier is what a propagation.MapCarrier gives.
func TestTraceCarrierIsAMapCarrier(t *testing.T) {
	for _, tc := range []struct{ parent, state string }{
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "vendor=x,other=y"},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", "vendor=x"},
		{"not a traceparent", "vendor=x"},
		{"", ""},
	} {
		m := propagation.MapCarrier{}
		if tc.parent != "" {
			m["traceparent"] = tc.parent
		}
		if tc.state != "" {
			m["tracestate"] = tc.state
		}
		want := trace.SpanContextFromContext(traceContext.Extract(context.Background(), m))
		got := trace.SpanContextFromContext(traceContext.Extract(context.Background(), &traceCarrier{parent: tc.parent, state: tc.state}))
		if !got.Equal(want) {
			t.Errorf("extract %q %q: got %v, want %v", tc.parent, tc.state, got, want)
		}
		if !want.IsValid() {
			continue
		}
		ctx := trace.ContextWithSpanContext(context.Background(), want)
		wm := propagation.MapCarrier{}
		traceContext.Inject(ctx, wm)
		var c traceCarrier
		traceContext.Inject(ctx, &c)
		if c.parent != wm["traceparent"] || c.state != wm["tracestate"] {
			t.Errorf("inject: got %q %q, want %q %q", c.parent, c.state, wm["traceparent"], wm["tracestate"])
		}
	}
}
