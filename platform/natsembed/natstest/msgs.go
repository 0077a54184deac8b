package natstest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Msgs is the number of messages stream holds now.
func Msgs(t testing.TB, ctx context.Context, b *bus.Bus, stream string) uint64 {
	t.Helper()
	s, err := b.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	return info.State.Msgs
}

// OnSubject is the number of messages of stream PRSAGA on subject now.
func OnSubject(t testing.TB, ctx context.Context, b *bus.Bus, subject string) uint64 {
	t.Helper()
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatalf("stream %s: %v", contracts.Stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("stream %s info on %s: %v", contracts.Stream, subject, err)
	}
	return info.State.Subjects[subject]
}

// Idle reports whether consumer durable of stream PRSAGA has nothing
// pending and nothing unacknowledged; one that cannot be read (not created
// yet) is not idle. For a condition polled with WaitFor.
func Idle(ctx context.Context, b *bus.Bus, durable string) bool {
	c, err := b.JS.Consumer(ctx, contracts.Stream, durable)
	if err != nil {
		return false
	}
	info, err := c.Info(ctx)
	return err == nil && info.NumPending == 0 && info.NumAckPending == 0
}
