package gcfloor_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gcfloor"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		floor, live uint64
		base, want  int
	}{
		{80 * mib, 20 * mib, 100, 300},   // goal 80 = 20 × (1 + 300/100)
		{80 * mib, 40 * mib, 100, 100},   // GOGC's own goal (80) already reaches the floor
		{80 * mib, 60 * mib, 100, 100},   // and above it
		{80 * mib, 200 * mib, 100, 100},  // a large heap: the floor does nothing
		{80 * mib, 20 * mib, 400, 400},   // never below the operator's GOGC
		{80 * mib, 0, 100, 2000},         // before the first cycle: bounded
		{80 * mib, 1024, 100, 2000},      // a nearly empty heap: bounded
		{80 * mib, 1024, 3000, 3000},     // the bound never lowers GOGC
		{16 * mib, 15 * mib, 100, 100},   // 6% above the live heap: GOGC's goal is higher
		{100 * mib, 10 * mib, 100, 900},  // goal 100
		{100 * mib, 100 * mib, 100, 100}, // at the floor
	} {
		if got := gcfloor.Percent(c.floor, c.live, c.base); got != c.want {
			t.Errorf("Percent(floor %d, live %d, base %d) = %d, want %d", c.floor, c.live, c.base, got, c.want)
		}
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The floor is what it is for: with a small live heap the goal sits at
// the floor instead of at twice the live heap (so the collector runs that
// many times less often); with a live heap above half the floor GOGC's own
// goal stands; Stop puts GOGC back. Goals, not counts of collections: a
// test that allocates fast enough to count them has its garbage marked
// live by the cycles it starts.
func TestFloorRaisesTheGoalOfASmallHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	// A live heap of 8 MiB, as a small service has (a nearly empty one
	// cannot be raised to the floor: GOGC is bounded, maxPercent).
	small := make([][]byte, 8)
	for i := range small {
		small[i] = make([]byte, mib)
	}
	defer runtime.KeepAlive(small)

	runtime.GC()
	without := heapGoal()
	if without > 40*mib {
		t.Fatalf("heap goal of an 8 MiB heap without a floor = %.1f MiB: the test's heap is not small", float64(without)/mib)
	}

	tn := gcfloor.Start(64 * mib)
	defer tn.Stop()
	runtime.GC() // the tuner sets GOGC after this cycle
	waitGOGC(t, tn, "above 100 with a 64 MiB floor and an 8 MiB heap", func(g int) bool { return g > 100 })
	if goal := heapGoal(); goal < 60*mib || goal > 80*mib {
		t.Errorf("heap goal with a 64 MiB floor and 8 MiB live = %.1f MiB (%.1f without), want about 64", float64(goal)/mib, float64(without)/mib)
	}

	// A live heap above half the floor: GOGC's own goal is above it, and
	// the tuner, still running after several cycles, steps back.
	held := make([][]byte, 48)
	for i := range held {
		held[i] = make([]byte, mib)
	}
	runtime.GC()
	waitGOGC(t, tn, "100 once the live heap is 56 MiB", func(g int) bool { return g == 100 })
	if goal := heapGoal(); goal < 100*mib {
		t.Errorf("heap goal with 56 MiB live = %.1f MiB, want GOGC's own, above 100", float64(goal)/mib)
	}
	runtime.KeepAlive(held)
	held = nil

	// Small again: back to the floor.
	runtime.GC()
	waitGOGC(t, tn, "above 100 again once the heap is small", func(g int) bool { return g > 100 })
	tn.Stop()
	if g := debug.SetGCPercent(100); g != 100 {
		t.Errorf("GOGC after Stop = %d, want 100 back", g)
	}
	runtime.GC()
	if goal := heapGoal(); goal > 40*mib {
		t.Errorf("heap goal after Stop = %.1f MiB, want the small heap's own", float64(goal)/mib)
	}
}

// waitGOGC waits for the tuner's GOGC to satisfy ok: it is set from a
// cleanup, which runs on its own goroutine after the cycle.
func waitGOGC(t *testing.T, tn *gcfloor.Tuner, want string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(tn.GOGC()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC = %d after 10 s, want %s", tn.GOGC(), want)
		}
		runtime.GC() // a cleanup queued by a cycle runs; give it more cycles
		runtime.Gosched()
	}
}

func TestSetLeavesAnOperatorsSettingsAlone(t *testing.T) {
	for _, env := range []map[string]string{{"GOGC": "200"}, {"GOMEMLIMIT": "1GiB"}} {
		if gcfloor.Set(64*mib, func(k string) string { return env[k] }) {
			t.Errorf("Set with %v set a floor", env)
		}
	}
	if gcfloor.Set(0, func(string) string { return "" }) {
		t.Error("Set(0) set a floor")
	}
	if gcfloor.Wanted(func(string) string { return "" }) != true {
		t.Error("Wanted with neither GOGC nor GOMEMLIMIT = false")
	}
}
