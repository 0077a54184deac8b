package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// benchDB opens a fresh database for a benchmark (closed when it ends)
// and builds n distinct events to emit.
func benchDB(b *testing.B, n int) (*sqlite.DB, []*event.Event) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "db.sqlite"), sqlite.Options{}, kv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	evs := make([]*event.Event, n)
	for i := range evs {
		evs[i] = requested(b, fmt.Sprintf("bench-%d", i))
	}
	return db, evs
}

// BenchmarkUnit is one handler transaction as the runner commits it:
// inbox insert, a state write, one outbox insert.
func BenchmarkUnit(b *testing.B) {
	ctx := context.Background()
	db, evs := benchDB(b, b.N+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := db.Update(ctx, func(tx store.Tx) error {
			return unit(tx, i, evs[i])
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func unit(stx store.Tx, i int, e *event.Event) error {
	tx := stx.(*sqlite.Tx)
	if _, err := tx.MarkProcessed("bench", e.ID()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(tx.Context(), `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, fmt.Sprint(i%100), i); err != nil {
		return err
	}
	return tx.Emit(e)
}

// BenchmarkMarkSent marks 16 relayed rows sent in one statement.
func BenchmarkMarkSent16(b *testing.B) {
	ctx := context.Background()
	const per = 16
	db, evs := benchDB(b, (b.N+1)*per)
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Emit(evs...) }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ids := make([]string, per)
		for j := range ids {
			ids[j] = evs[i*per+j].ID()
		}
		if err := db.MarkSent(ctx, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/row")
}

// BenchmarkUnitBatch16 commits 16 such units per transaction (UpdateEach),
// as the runner does under load.
func BenchmarkUnitBatch16(b *testing.B) {
	ctx := context.Background()
	const per = 16
	db, evs := benchDB(b, (b.N+1)*per)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fns := make([]func(tx store.Tx) error, per)
		for j := range fns {
			k := i*per + j
			fns[j] = func(tx store.Tx) error { return unit(tx, k, evs[k]) }
		}
		errs, err := db.UpdateEach(ctx, fns)
		if err != nil {
			b.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/unit")
}

// BenchmarkUnitConcurrent is BenchmarkUnit from several goroutines at once,
// as a service's workers commit: each call one unit, its own outcome.
func BenchmarkUnitConcurrent(b *testing.B) {
	ctx := context.Background()
	db, evs := benchDB(b, b.N+1)
	var next atomic.Int64
	b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1)) - 1
			if err := db.Update(ctx, func(tx store.Tx) error { return unit(tx, i, evs[i]) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
