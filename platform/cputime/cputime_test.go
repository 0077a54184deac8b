//go:build unix

package cputime_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/cputime"
)

// burn does CPU work that the compiler cannot drop.
func burn(n int) byte {
	var sum [32]byte
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0]
}

// Self moves with the work this process does: it advances by at least the
// CPU a spinning loop burns, and not backwards.
func TestSelfCountsThisProcessesWork(t *testing.T) {
	start, ok := cputime.Self()
	if !ok {
		t.Fatal("Self: no CPU time on a unix platform")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		burn(10_000)
		now, _ := cputime.Self()
		if now < start {
			t.Fatalf("CPU time went back: %v after %v", now, start)
		}
		if now-start >= 20*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time advanced %v in 10 s of spinning, want at least 20ms", now-start)
		}
	}
}

// PerOp reports cpu-µs/op, above zero for a loop that does work.
func TestPerOpReportsTheMetric(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		defer cputime.PerOp(b)()
		for b.Loop() {
			burn(1000)
		}
	})
	if v, ok := r.Extra["cpu-µs/op"]; !ok || v <= 0 {
		t.Errorf("cpu-µs/op = %v (reported: %v), want above zero", v, ok)
	}
}
