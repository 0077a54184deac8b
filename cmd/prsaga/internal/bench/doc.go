// Package bench is `prsaga bench` (../../../../BENCH.md): it builds the
// workload's bare repositories, starts the five services (in this process,
// or each as its own `prsaga serve` child against an embedded NATS server
// in this process), publishes merge requests straight to JetStream with at
// most C sagas in flight, waits for the ledger to report each MERGED,
// checks the world (ledger rows, refs, trees, trailers) and reports
// throughput, latency (publish of requested → ledger's commit of MERGED),
// per-step latencies from the ledger's transitions, peak RSS and CPU.
//
// The run is bounded by Options.Timeout and stops by itself; every process
// and goroutine it starts is stopped before Run returns.
package bench
