package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
)

// A JSON merge request carrying a W3C traceparent header starts the saga
// in the caller's trace; a malformed one is ignored, not refused.
func TestPostMergeRequestKeepsTheCallersTrace(t *testing.T) {
	f := newFixture(t, nil)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for i, c := range []struct{ tp, want string }{{tp, tp}, {"00-nope", ""}} {
		r := request(fmt.Sprintf("acme/widgets#%d", 200+i))
		resp, out := f.do("POST", "/api/v1/merge-requests", jsonBody(r), "Content-Type", "application/json",
			"traceparent", c.tp, "tracestate", "forge=1")
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST: %d %s", resp.StatusCode, out)
		}
		evs := f.outbox()
		e := evs[len(evs)-1]
		if e.Meta.TraceParent != c.want {
			t.Errorf("traceparent header %q: event traceparent %q, want %q", c.tp, e.Meta.TraceParent, c.want)
		}
		if c.want != "" && e.Meta.TraceState != "forge=1" {
			t.Errorf("tracestate %q, want forge=1", e.Meta.TraceState)
		}
	}
}
