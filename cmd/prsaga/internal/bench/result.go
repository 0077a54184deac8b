package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Result of a run; Line is BENCH.md's result line.
type Result struct {
	Workload    string `json:"workload"`
	Mode        string `json:"mode"`
	Durability  string `json:"durability"`
	N           int    `json:"n"`
	Concurrency int    `json:"concurrency"`
	Repos       int    `json:"repos"`
	Watchers    int    `json:"watchers"`
	Preload     int    `json:"preload"`
	// GCHeapFloor is the heap floor the run's processes kept (gcfloor):
	// "80MiB", "16MiB/process" (procs), or "off" and why.
	GCHeapFloor string `json:"gc_heap_floor"`

	// Elapsed is from the first publish to the ledger's last MERGED commit.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	SagasPerSecond float64 `json:"sagas_per_second"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	OK             int     `json:"ok"`
	Bad            int     `json:"bad"`

	// PeakRSSBytes sums the peak RSS of every process of the run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// TimedPeakRSSBytes sums their peaks within the timed part alone (0
	// where the peak could not be reset at its start): without the
	// benchmark's set-up and checks.
	TimedPeakRSSBytes int64 `json:"timed_peak_rss_bytes,omitempty"`
	// CPUSeconds is the CPU time every process spent during the timed part.
	// MemoryAtPeak is what made up the RSS at the timed part's peak
	// (inproc mode, Linux).
	MemoryAtPeak *MemoryBreakdown `json:"memory_at_peak,omitempty"`
	CPUSeconds   float64          `json:"cpu_seconds"`
	// CPUMsPerSaga is CPUSeconds per ok saga, in milliseconds.
	CPUMsPerSaga float64 `json:"cpu_ms_per_saga"`
	// Syscalls every process made during the timed part, as counted by
	// SyscallSource; nil (and SyscallsPerSaga nil) when any process's
	// count is unavailable.
	Syscalls        *SyscallCount `json:"syscalls"`
	SyscallsPerSaga *float64      `json:"syscalls_per_saga"`
	SyscallSource   string        `json:"syscall_source"`
	// PageFaults every process took during the timed part (minor and
	// major: getrusage, /proc/<pid>/stat); nil when any process's count is
	// unavailable. A first touch of anonymous memory is one, and costs
	// far more CPU on some virtual machines than on bare metal.
	PageFaults        *int64   `json:"page_faults,omitempty"`
	PageFaultsPerSaga *float64 `json:"page_faults_per_saga,omitempty"`
	// Allocs is what the Go runtimes of every process allocated during the
	// timed part; nil when any process's count is unavailable.
	Allocs        *AllocCount    `json:"allocs,omitempty"`
	AllocsPerSaga *AllocRate     `json:"allocs_per_saga,omitempty"`
	Processes     []ProcessUsage `json:"processes"`
	Steps         []Quantiles    `json:"steps"`
	Queries       []QueryStat    `json:"queries,omitempty"`
	Soak          *SoakReport    `json:"soak,omitempty"`
	// Problems found by the world check, and why sagas failed (capped).
	Problems []string `json:"problems,omitempty"`
	TimedOut bool     `json:"timed_out"`
	Line     string   `json:"line"`
}

// ProcessUsage is one process's share.
type ProcessUsage struct {
	Name              string  `json:"name"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	TimedPeakRSSBytes int64   `json:"timed_peak_rss_bytes,omitempty"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	// Syscalls during the timed part; nil where /proc does not say.
	Syscalls        *SyscallCount `json:"syscalls"`
	SyscallsPerSaga *float64      `json:"syscalls_per_saga"`
	// PageFaults during the timed part; nil where unknown.
	PageFaults        *int64   `json:"page_faults,omitempty"`
	PageFaultsPerSaga *float64 `json:"page_faults_per_saga,omitempty"`
	// Allocs during the timed part; nil where unknown.
	Allocs        *AllocCount `json:"allocs,omitempty"`
	AllocsPerSaga *AllocRate  `json:"allocs_per_saga,omitempty"`
}

// Quantiles of one measured span.
type Quantiles struct {
	Name  string  `json:"name"`
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// QueryStat is one ledger read path timed after a preload.
type QueryStat struct {
	Quantiles
	What  string `json:"what"`            // the request or store call
	Plan  string `json:"plan,omitempty"`  // SQLite's plan of the SQL behind it
	Error string `json:"error,omitempty"` // why it could not be timed
}

// FormatLine is BENCH.md's result line.
func (r Result) FormatLine() string {
	return fmt.Sprintf("prsaga %s N=%d C=%d R=%d: %.1f sagas/s p50=%.1fms p99=%.1fms ok=%d bad=%d",
		r.Workload, r.N, r.Concurrency, r.Repos, r.SagasPerSecond, r.P50Ms, r.P99Ms, r.OK, r.Bad)
}

// quantiles summarises durations with the nearest-rank method.
func quantiles(name string, ds []time.Duration) Quantiles {
	q := Quantiles{Name: name, Count: len(ds)}
	if len(ds) == 0 {
		return q
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q.P50Ms = ms(rank(s, 0.50))
	q.P99Ms = ms(rank(s, 0.99))
	q.MaxMs = ms(s[len(s)-1])
	return q
}

func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.999999) - 1 // ceil(p·n) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stepNames are the spans between the ledger's transitions of one saga:
// each is the step's own work plus the hand-offs (relay, JetStream, the
// ledger's projection) that make it visible.
var stepNames = []string{
	"publish → VALIDATING (ledger sees the request)",
	"VALIDATING → MERGING (validator)",
	"MERGING → NOTIFYING (merger)",
	"NOTIFYING → INDEXING (notifier)",
	"INDEXING → MERGED (indexer)",
}

var stepStates = [...]contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying, contracts.StateIndexing, contracts.StateMerged}

// timings derives latencies (publish → MERGED) and per-step spans from
// the ledger's transitions of the sagas that are ok; it also returns the
// first publish and the last MERGED commit.
func timings(d *driver, out []outcome) (lat []time.Duration, steps [][]time.Duration, first, last time.Time) {
	steps = make([][]time.Duration, len(stepNames))
	for i, o := range out {
		if !o.ok() {
			continue
		}
		merged := o.at[len(stepStates)-1] // MERGED
		if merged.IsZero() {
			continue
		}
		lat = append(lat, merged.Sub(d.sent[i]))
		if first.IsZero() || d.sent[i].Before(first) {
			first = d.sent[i]
		}
		if merged.After(last) {
			last = merged
		}
		prev := d.sent[i]
		for k, t := range o.at {
			if t.IsZero() {
				break
			}
			steps[k] = append(steps[k], t.Sub(prev))
			prev = t
		}
	}
	return lat, steps, first, last
}
