package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// WaitEvent reads stream PRSAGA from the start on subject and returns the
// first event for which match returns true, failing the test after timeout.
func WaitEvent(t testing.TB, b *bus.Bus, subject string, timeout time.Duration, match func(*event.Event) bool) *event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := b.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatalf("ordered consumer on %s: %v", subject, err)
	}
	for {
		m, err := c.Next(jetstream.FetchMaxWait(time.Until(deadline(ctx))))
		if err != nil {
			t.Fatalf("no matching event on %s within %s: %v", subject, timeout, err)
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil {
			continue
		}
		if match == nil || match(e) {
			return e
		}
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// WaitFor polls cond until it holds, failing the test with what after
// within: the tests' one way to wait for something asynchronous.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("gave up after %v waiting for %s", within, what)
		case <-tick.C:
		}
	}
}
