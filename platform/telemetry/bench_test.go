package telemetry_test

import (
	"context"
	"testing"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// The relay's span of one publish, as `prsaga serve` runs it without an
// exporter: every published event pays this once.
func BenchmarkPublishing(b *testing.B) {
	tel, err := telemetry.New(context.Background(), telemetry.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	msg, err := bus.Encode("prsaga.merge.requested", requested(b, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").Event)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tel.Publishing(ctx, "ledger", msg)(nil)
	}
}
