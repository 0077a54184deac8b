package outbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/prsaga/prsaga/platform/store"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// BenchmarkFlush64 relays one batch of 64 committed rows: read them,
// publish to JetStream, wait for the acks, mark them sent.
func BenchmarkFlush64(b *testing.B) {
	const batch = 64
	_, bs := natstest.Start(b, bus.Config{})
	db := sqlitetest.Open(b)
	r := &outbox.Relay{Store: db, Pub: bs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Batch: batch}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := db.Update(ctx, func(tx store.Tx) error {
			for j := 0; j < batch; j++ {
				if err := tx.Emit(requested(b, fmt.Sprintf("b%d-%d", i, j))); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n, err := r.Flush(ctx)
		if err != nil || n != batch {
			b.Fatalf("flush: %d rows, %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
}
