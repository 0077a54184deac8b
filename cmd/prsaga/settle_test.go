package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// waitSettled waits until every durable consumer has nothing pending and
// nothing unacknowledged (three looks in a row, half a second apart).
func waitSettled(t *testing.T, ctx context.Context, b *bus.Bus) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	quiet := 0
	for quiet < 3 {
		busy := ""
		for info := range consumers(t, ctx, b) {
			if info.NumPending > 0 || info.NumAckPending > 0 {
				busy = fmt.Sprintf("%s: %d pending, %d unacknowledged", info.Name, info.NumPending, info.NumAckPending)
			}
		}
		if busy == "" {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers did not settle: %s", busy)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// consumers lists stream PRSAGA's durable consumers (the services'; not
// the ordered consumers tests read with).
func consumers(t *testing.T, ctx context.Context, b *bus.Bus) map[*jetstream.ConsumerInfo]bool {
	t.Helper()
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	out := map[*jetstream.ConsumerInfo]bool{}
	lister := s.ListConsumers(ctx)
	for info := range lister.Info() {
		if info.Config.Durable != "" {
			out[info] = true
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitCond polls cond until it holds, failing the test after d.
func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
