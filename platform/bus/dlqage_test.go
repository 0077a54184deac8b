package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
)

// PRSAGA_RETENTION_DLQ is the dead-letter stream's MaxAge, applied at start
// to a stream an earlier start created with another age; the event stream
// keeps its own.
func TestDLQMaxAgeFollowsTheSetting(t *testing.T) {
	ctx := testContext(t)
	ns, old := natstest.Start(t, bus.Config{}) // DLQ created with the default: the stream's MaxAge
	if got := maxAge(t, ctx, old, contracts.DLQStream); got != 168*time.Hour {
		t.Fatalf("DLQ MaxAge by default: %v, want the stream's 168h", got)
	}
	for _, want := range []time.Duration{720 * time.Hour, 48 * time.Hour} {
		b, err := bus.Connect(ctx, bus.Config{InProcess: ns.Server, Name: t.Name(), DLQMaxAge: want})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.EnsureStreams(ctx); err != nil {
			t.Fatalf("EnsureStreams with DLQMaxAge %v on the existing streams: %v", want, err)
		}
		if got := maxAge(t, ctx, b, contracts.DLQStream); got != want {
			t.Errorf("DLQ MaxAge after a start with %v: %v", want, got)
		}
		if got := maxAge(t, ctx, b, contracts.Stream); got != 168*time.Hour {
			t.Errorf("event stream MaxAge after a start with DLQMaxAge %v: %v, want 168h", want, got)
		}
		b.Close()
	}
}

func maxAge(t *testing.T, ctx context.Context, b *bus.Bus, stream string) time.Duration {
	t.Helper()
	s, err := b.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.Config.MaxAge
}
