// Package cputime reads the CPU time this process has used, every thread,
// user and system, for benchmarks to report per operation: on a shared
// machine it varies far less than the wall clock, and it counts the work
// a benchmark starts in the background (segment merges, the GC) that
// ns/op leaves out.
package cputime

import "testing"

// PerOp reports the process's CPU time per iteration of b, from the call
// to the call of the function it returns, as the metric cpu-µs/op (none
// where the platform does not tell).
func PerOp(b *testing.B) func() {
	start, ok := Self()
	return func() {
		if now, ok2 := Self(); ok && ok2 {
			b.ReportMetric(float64((now-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		}
	}
}
