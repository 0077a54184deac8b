package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/prsaga/prsaga/services/ledger"
)

// The timeline's trace id is the latest traceparent of the current run;
// other runs' events and events without one are passed over.
func TestTraceIDOfTheCurrentRun(t *testing.T) {
	ev := func(run, tp string) ledger.Event {
		raw, _ := json.Marshal(map[string]string{"id": "x", "traceparent": tp})
		return ledger.Event{CorrelationID: run, Event: raw}
	}
	const (
		a = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-00f067aa0ba902b7-01"
		b = "00-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-00f067aa0ba902b7-01"
	)
	evs := []ledger.Event{ev("run-1", a), ev("run-2", b), ev("run-1", ""), {CorrelationID: "run-1", Event: []byte("{")}}
	if got := traceID(evs, "run-1"); got != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
		t.Errorf("run-1: %q", got)
	}
	if got := traceID(evs, "run-2"); got != "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" {
		t.Errorf("run-2: %q", got)
	}
	if got := traceID(evs, "run-3"); got != "" {
		t.Errorf("run-3: %q, want none", got)
	}
}
