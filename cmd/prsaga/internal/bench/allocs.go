package bench

import (
	"context"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// AllocCount is what a process's Go runtime allocated and how many
// collections it finished. Unlike CPU time it counts work: it does not
// move with the machine's other load, so a change of a few per cent in
// what a saga allocates shows in one run, where CPU time needs many.
type AllocCount struct {
	Bytes    int64 `json:"bytes"`     // heap bytes allocated (runtime.MemStats.TotalAlloc)
	Objects  int64 `json:"objects"`   // heap objects allocated, tiny ones included (Mallocs)
	GCCycles int64 `json:"gc_cycles"` // collections finished (NumGC)
}

// sub is a − b; nil when either is unknown or a counter went back (a
// restarted process).
func (a *AllocCount) sub(b *AllocCount) *AllocCount {
	if a == nil || b == nil || a.Bytes < b.Bytes || a.Objects < b.Objects || a.GCCycles < b.GCCycles {
		return nil
	}
	return &AllocCount{Bytes: a.Bytes - b.Bytes, Objects: a.Objects - b.Objects, GCCycles: a.GCCycles - b.GCCycles}
}

func (a *AllocCount) add(b AllocCount) {
	a.Bytes += b.Bytes
	a.Objects += b.Objects
	a.GCCycles += b.GCCycles
}

// AllocRate is an AllocCount per ok saga.
type AllocRate struct {
	Bytes    float64 `json:"bytes"`
	Objects  float64 `json:"objects"`
	GCCycles float64 `json:"gc_cycles"`
}

func allocRate(a *AllocCount, ok int) *AllocRate {
	if a == nil || ok == 0 {
		return nil
	}
	n := float64(ok)
	return &AllocRate{Bytes: float64(a.Bytes) / n, Objects: float64(a.Objects) / n, GCCycles: float64(a.GCCycles) / n}
}

// The runtime/metrics names behind the runtime.MemStats fields that the
// Prometheus Go collector of a service process exports.
var allocMetrics = []string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/gc/heap/tiny/allocs:objects",
	"/gc/cycles/total:gc-cycles",
}

// selfAllocs is this process's count so far.
func selfAllocs() *AllocCount {
	s := make([]metrics.Sample, len(allocMetrics))
	for i, name := range allocMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			return nil
		}
	}
	return &AllocCount{
		Bytes:    int64(s[0].Value.Uint64()),
		Objects:  int64(s[1].Value.Uint64() + s[2].Value.Uint64()),
		GCCycles: int64(s[3].Value.Uint64()),
	}
}

// The Prometheus Go collector's names for the same counters.
const (
	promAllocBytes = "go_memstats_alloc_bytes_total"
	promMallocs    = "go_memstats_mallocs_total"
	promGCCount    = "go_gc_duration_seconds_count"
)

// scrapeTimeout bounds one scrape: Stop reads every child's usage before
// it stops them, and a wedged child must not hold that up for long.
const scrapeTimeout = 2 * time.Second

// scrapeAllocs reads a service process's count from its /metrics; nil
// when the scrape fails or lacks one of the three.
func scrapeAllocs(base string) *AllocCount {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	var a AllocCount
	found := 0
	if err := scrapeMetrics(ctx, base, func(line string) {
		name, v, ok := unlabelled(line)
		if !ok {
			return
		}
		switch name {
		case promAllocBytes:
			a.Bytes, found = v, found+1
		case promMallocs:
			a.Objects, found = v, found+1
		case promGCCount:
			a.GCCycles, found = v, found+1
		}
	}); err != nil || found != 3 {
		return nil
	}
	return &a
}

// unlabelled reads a sample line without labels (`name value`) of the
// Prometheus text format; counters this large come as floats (1.2e+09).
func unlabelled(line string) (name string, v int64, ok bool) {
	name, value, found := strings.Cut(line, " ")
	if !found || name == "" || name[0] == '#' || strings.ContainsRune(name, '{') {
		return "", 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || !(f >= 0 && f < 1<<62) { // NaN and ±Inf are no counts
		return "", 0, false
	}
	return name, int64(f), true
}
