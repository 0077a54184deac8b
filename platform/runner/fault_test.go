package runner_test

import (
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/fault"
)

// The runner's points are named per consumer in package fault, as
// PRSAGA_FAULTS arms them; an error there is handled as Config.Fault's.

func TestNamedAfterCommitFault(t *testing.T) {
	defer fault.Arm(fault.Rule{Point: contracts.ConsumerValidator + ".after-commit", Action: fault.Error})()
	h := start(t, setup{bus: bus.Config{AckWait: 500 * time.Millisecond}})
	h.publish(requested(t, "req-1", validRequest()))
	h.waitRedelivered()
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1 (the inbox drops the redelivery)", n)
	}
}

func TestNamedAfterEffectFaultOfAnotherConsumerDoesNotFire(t *testing.T) {
	defer fault.Arm(
		fault.Rule{Point: contracts.ConsumerValidator + ".after-effect", Action: fault.Error},
		fault.Rule{Point: contracts.ConsumerMerger + ".after-effect", Action: fault.Error, From: true},
	)()
	h := start(t, setup{})
	h.settled(h.publish(requested(t, "req-1", validRequest())))
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 2 {
		t.Errorf("handler runs: got %d, want 2 (the validator's point fails the first, the merger's never)", n)
	}
}
