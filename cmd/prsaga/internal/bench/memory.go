package bench

import (
	"runtime/metrics"
	"sync"
	"time"
)

// MemoryBreakdown is what made up this process's RSS when it peaked in
// the timed part (inproc mode: every service is in it). The Go figures are
// the runtime's own (runtime/metrics); OutsideGoBytes is anonymous memory
// the Go runtime does not account for — C-style allocations, here
// SQLite's page caches and statements in modernc's libc — and FileBytes
// file-backed mappings (bleve's mapped segments, SQLite's -shm files).
type MemoryBreakdown struct {
	RSSBytes       int64   `json:"rss_bytes"`
	AnonBytes      int64   `json:"anon_bytes"`       // RssAnon
	FileBytes      int64   `json:"file_bytes"`       // RssFile + RssShmem
	HeapLiveBytes  int64   `json:"heap_live_bytes"`  // Go heap objects, live or not yet swept
	HeapFreeBytes  int64   `json:"heap_free_bytes"`  // Go heap spans kept for reuse, not returned to the OS
	StacksBytes    int64   `json:"stacks_bytes"`     // goroutine and OS thread stacks
	GoOtherBytes   int64   `json:"go_other_bytes"`   // the Go runtime's metadata and the rest
	OutsideGoBytes int64   `json:"outside_go_bytes"` // AnonBytes less what Go holds
	HeapGoalBytes  int64   `json:"heap_goal_bytes"`  // the GC's goal at that moment
	At             float64 `json:"at_seconds"`       // into the timed part
}

// memSampler samples the RSS and the Go runtime's memory every interval
// and keeps the sample of the highest RSS.
type memSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak *MemoryBreakdown
}

var memMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/heap/goal:bytes",
}

func startMemSampler(every time.Duration) *memSampler {
	s := &memSampler{stop: make(chan struct{})}
	t0 := time.Now()
	samples := make([]metrics.Sample, len(memMetrics))
	for i, n := range memMetrics {
		samples[i].Name = n
	}
	take := func() {
		rss, anon, file, ok := selfRSS()
		if !ok || (s.peak != nil && rss <= s.peak.RSSBytes) {
			return
		}
		metrics.Read(samples)
		v := make([]int64, len(samples))
		for i := range samples {
			if samples[i].Value.Kind() == metrics.KindUint64 {
				v[i] = int64(samples[i].Value.Uint64())
			}
		}
		objects, unused, free, stacks, osStacks, total, released, goal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		goResident := total - released
		s.peak = &MemoryBreakdown{
			RSSBytes: rss, AnonBytes: anon, FileBytes: file,
			HeapLiveBytes: objects, HeapFreeBytes: unused + free, StacksBytes: stacks + osStacks,
			GoOtherBytes:   goResident - objects - unused - free - stacks - osStacks,
			OutsideGoBytes: anon - goResident,
			HeapGoalBytes:  goal,
			At:             time.Since(t0).Seconds(),
		}
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			take()
			select {
			case <-s.stop:
				take()
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling; the breakdown at the peak, nil without /proc.
func (s *memSampler) Stop() *MemoryBreakdown {
	close(s.stop)
	s.done.Wait()
	return s.peak
}
