package natstest

import (
	"context"
	"testing"

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
