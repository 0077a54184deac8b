package racetest_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/racetest"
)

// Every item is run once, with its own index, and none before all are
// started: each contender sees every other one started when it runs.
func TestAtOnceReleasesEveryoneTogether(t *testing.T) {
	const n = 16
	items := make([]int, n)
	for i := range items {
		items[i] = i * 10
	}
	var started atomic.Int32
	var seen [n]atomic.Int32
	var early atomic.Int32
	wait := racetest.AtOnce(items, func(i int, item int) {
		if started.Add(1) == 1 {
			// The first to run: the others are released with it, so all of
			// them reach this line shortly; wait for that with a deadline.
			deadline := time.Now().Add(10 * time.Second)
			for started.Load() < n && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if started.Load() < n {
				early.Add(1)
			}
		}
		if item != i*10 {
			t.Errorf("item %d got %d, want %d", i, item, i*10)
		}
		seen[i].Add(1)
	})
	wait()
	if early.Load() != 0 {
		t.Error("the first contender ran alone: the others were not released with it")
	}
	for i := range seen {
		if got := seen[i].Load(); got != 1 {
			t.Errorf("item %d ran %d times, want 1", i, got)
		}
	}
}
