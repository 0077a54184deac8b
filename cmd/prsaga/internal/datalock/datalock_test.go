package datalock_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/datalock"
)

// Within one process each Take opens its own files, so the kernel judges
// them as it judges two processes (flock belongs to the open file).
func TestTakeRefusesASecondHolder(t *testing.T) {
	dir := t.TempDir()
	parts := []datalock.Part{{Name: "nats"}, {Name: "ledger"}, {Name: "indexer", Shared: true}}
	first, err := datalock.Take(dir, parts, datalock.Me("prsaga dev", "http http://127.0.0.1:8080", "nats nats://127.0.0.1:4222"))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	_, err = datalock.Take(dir, []datalock.Part{{Name: "ledger"}}, datalock.Me("prsaga serve ledger"))
	if !errors.Is(err, datalock.ErrHeld) {
		t.Fatalf("second holder of ledger: %v, want ErrHeld", err)
	}
	for _, want := range []string{"ledger held by pid " + strconv.Itoa(os.Getpid()), "(prsaga dev: http http://127.0.0.1:8080, nats nats://127.0.0.1:4222)", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// A shared part is refused to an exclusive taker, and shared with
	// another sharer only when nobody holds it exclusively.
	if _, err := datalock.Take(dir, []datalock.Part{{Name: "indexer"}}, datalock.Me("prsaga dev")); !errors.Is(err, datalock.ErrHeld) {
		t.Errorf("exclusive taker of a shared part: %v, want ErrHeld", err)
	}
	standby, err := datalock.Take(dir, []datalock.Part{{Name: "indexer", Shared: true}}, datalock.Me("prsaga serve indexer"))
	if err != nil {
		t.Fatalf("second sharer of indexer: %v", err)
	}
	standby.Release()

	// What the first process learns after it started is what a refused
	// one is told.
	if err := first.Record(datalock.Me("prsaga dev", "http http://127.0.0.1:9999")); err != nil {
		t.Fatal(err)
	}
	_, err = datalock.Take(dir, []datalock.Part{{Name: "nats"}, {Name: "ledger"}}, datalock.Me("prsaga nats"))
	if err == nil || !strings.Contains(err.Error(), "nats, ledger held by pid") || !strings.Contains(err.Error(), "http://127.0.0.1:9999)") ||
		strings.Contains(err.Error(), "4222") {
		t.Errorf("after Record: %v; want nats and ledger named once, held by the new record", err)
	}
	held, err := datalock.Holders(dir)
	if err != nil || len(held) != 1 || !strings.Contains(held[0], "indexer, ledger, nats held by pid") {
		t.Errorf("Holders = %q, %v; want one holder of indexer, ledger and nats", held, err)
	}

	// A refused Take holds nothing: merger, free, is free after it.
	if _, err := datalock.Take(dir, []datalock.Part{{Name: "merger"}, {Name: "ledger"}}, datalock.Me("x")); err == nil {
		t.Fatal("took ledger twice")
	}
	m, err := datalock.Take(dir, []datalock.Part{{Name: "merger"}}, datalock.Me("x"))
	if err != nil {
		t.Fatalf("merger after a refused Take: %v", err)
	}
	m.Release()

	first.Release()
	first.Release() // twice is harmless
	if held, err := datalock.Holders(dir); err != nil || len(held) != 0 {
		t.Errorf("Holders after Release = %q, %v; want none", held, err)
	}
	again, err := datalock.Take(dir, parts, datalock.Me("prsaga dev"))
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	again.Release()
}

// A lock file without a readable record (a holder that died before it
// wrote one, or an empty file) still refuses, naming no pid.
func TestHeldWithoutARecord(t *testing.T) {
	dir := t.TempDir()
	l, err := datalock.Take(dir, []datalock.Part{{Name: "ledger"}}, datalock.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = datalock.Take(dir, []datalock.Part{{Name: "ledger"}}, datalock.Me("x"))
	if err == nil || !strings.Contains(err.Error(), "ledger held by another process") {
		t.Errorf("error %v; want the part held by another process", err)
	}
}
