package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
)

// Events the consumer skips are acknowledged unhandled — no handler run,
// no inbox row, no effect — and the others are handled as before, by a
// handler and by a batch handler alike.
func TestSkippedEventsAreAcknowledgedUnhandled(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			h := start(t, setup{batch: batch, workers: 1, tune: func(cfg *runner.Config) {
				cfg.Skip = func(env contracts.Envelope) bool { return strings.HasPrefix(env.Event.ID(), "skip-") }
			}})
			h.publish(requested(t, "skip-1", validRequest()))
			h.publish(requested(t, "keep-1", validRequest()))
			last := h.publish(requested(t, "skip-2", validRequest()))
			h.settled(last) // every one acknowledged
			for _, id := range []string{"skip-1", "skip-2"} {
				if h.processed(id) {
					t.Errorf("%s has an inbox row", id)
				}
				if n := h.committedEffects(id); n != 0 {
					t.Errorf("committed effects of %s: got %d, want 0", id, n)
				}
			}
			if n := h.committedEffects("keep-1"); n != 1 {
				t.Errorf("committed effects of keep-1: got %d, want 1", n)
			}
			if n := h.calls.Load(); n != 1 {
				t.Errorf("handler runs: got %d, want 1 (keep-1 only)", n)
			}
		})
	}
}
