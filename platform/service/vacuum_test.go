package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// A prune round that frees most of the file gives the pages back: the
// file_bytes it reports shrink and the free pages left are at most a
// tenth of the file; cycles of traffic and pruning keep it there.
func TestPruneRoundVacuums(t *testing.T) {
	clk := storetest.NewClock(storetest.T0)
	db := openAt(t, clk)
	tel, err := telemetry.New(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	size := func(what string) float64 {
		return counter(t, tel, telemetry.MetricStoreSize, map[string]string{"service": "validator", "what": what})
	}
	pad := strings.Repeat("p", 400)
	r := service.Retention{Inbox: time.Hour, Sent: time.Hour}
	var after []float64
	for cycle := 0; cycle < 3; cycle++ {
		for b := 0; b < 8; b++ {
			if err := db.Update(storetest.Context(t), func(tx store.Tx) error {
				for i := 0; i < 500; i++ {
					if _, err := tx.MarkProcessed("validator", fmt.Sprintf("%s-%d-%d-%d", pad, cycle, b, i)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		// The rows into the file: the writer checkpoints every 4,000 pages,
		// more than a cycle writes.
		if _, err := db.Reader().ExecContext(storetest.Context(t), `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			t.Fatal(err)
		}
		// Nothing expired yet: the round prunes nothing, nothing to give back.
		if err := service.PruneRound(storetest.Context(t), "validator", db, r, tel); err != nil {
			t.Fatal(err)
		}
		// The file without its WAL: the WAL carries the moved pages until
		// a checkpoint and is cut back only by the next write after one.
		full := size("file_bytes") - size("wal_bytes")
		clk.Advance(2 * time.Hour)
		if err := service.PruneRound(storetest.Context(t), "validator", db, r, tel); err != nil {
			t.Fatal(err)
		}
		got, free := size("file_bytes")-size("wal_bytes"), size("free_bytes")
		if got >= full/2 {
			t.Errorf("cycle %d: file %v bytes after pruning every row, %v before; want it to shrink by half at least", cycle, got, full)
		}
		if free > got/10+4096 {
			t.Errorf("cycle %d: %v free bytes left in a file of %v; want at most a tenth", cycle, free, got)
		}
		after = append(after, got)
	}
	if after[2] > after[0] {
		t.Errorf("file after each cycle %v: grew across cycles", after)
	}
}
