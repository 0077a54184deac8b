package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/runner"
)

// Shared setup of the tests where one service's step fails until the
// runner gives up (MERGE_FAILED at that step) and a retry then goes
// through.

// failFirstDeliveries is a fault hook failing the side effect of attempt
// 1's events of type typ (those about subject only, when it is not empty)
// with why on every delivery but the last of maxDeliver. It is passed on
// the last, where the runner gives up and reports step_failed: failing
// there too would retry forever.
func failFirstDeliveries(typ, subject string, maxDeliver int, why string) func(string, contracts.Envelope) error {
	var calls sync.Map
	return func(point string, env contracts.Envelope) error {
		if point != runner.FaultAfterEffect || env.Event.Type() != typ || env.Meta.Attempt != 1 || (subject != "" && env.Event.Subject() != subject) {
			return nil
		}
		n, _ := calls.LoadOrStore(env.Event.ID(), new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) < int32(maxDeliver) {
			return errors.New(why)
		}
		return nil
	}
}

// startApart starts every service but svc in one stack, and svc in a
// stack of its own sharing the NATS server, without HTTP and with fault,
// so that the hook sees only svc's deliveries. It returns the first.
func startApart(t *testing.T, cfg config.Config, svc string, fault func(string, contracts.Envelope) error) *stack.Stack {
	t.Helper()
	others := slices.DeleteFunc([]string{"validator", "merger", "notifier", "indexer", "ledger"}, func(s string) bool { return s == svc })
	st := startWith(t, stack.Options{Config: cfg, Services: others})
	acfg := cfg
	acfg.NATSURL = st.NATS.Addr()
	startWith(t, stack.Options{Config: acfg, Services: []string{svc}, NoHTTP: true, Fault: fault})
	return st
}

// retriedOnce fails the test unless pr's saga left MERGE_FAILED exactly
// once and is at attempt 2, and returns when it left.
func retriedOnce(t *testing.T, c *client.Client, pr string) time.Time {
	t.Helper()
	s, err := c.Saga(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	var retries []time.Time
	for _, tr := range s.Transitions {
		if tr.FromState == string(contracts.StateMergeFailed) {
			retries = append(retries, tr.At)
		}
	}
	if len(retries) != 1 || s.Attempts != 2 {
		t.Fatalf("%s was retried %d times (attempts %d), want exactly once", pr, len(retries), s.Attempts)
	}
	return retries[0]
}
