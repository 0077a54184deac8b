package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/bench"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// cmdBench runs BENCH.md's workloads and prints the result line last.
// Exit codes: 0 every saga ok and the world checks out; 1 some did not;
// 3 the run hit --timeout; 2 usage.
func cmdBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	// Every configuration flag but --repos, which BENCH.md gives to the
	// repository count (the repositories live under the run's directory).
	cfs, load := newFlags("bench", getenv, stderr)
	fs := flag.NewFlagSet("prsaga bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfs.VisitAll(func(f *flag.Flag) {
		if f.Name != "repos" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	o := bench.Options{}
	fs.StringVar(&o.Workload, "workload", bench.W2, "W1 (independent fast-forwards) or W2 (merges into a shared main)")
	fs.IntVar(&o.N, "prs", 1000, "sagas in all")
	fs.IntVar(&o.Concurrency, "concurrency", 64, "sagas in flight at most")
	fs.IntVar(&o.Repos, "repos", 20, "repositories; PR i lives in repository i mod R")
	fs.StringVar(&o.Mode, "mode", bench.ModeInproc, "inproc (all in this process) or procs (a `prsaga serve` process per service)")
	fs.IntVar(&o.Preload, "preload", 0, "finished sagas to put in the ledger first; then time its read paths")
	fs.IntVar(&o.Watchers, "watchers", 0, "webhook watchers per repository (served by the benchmark)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound on the whole run")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	keep := fs.Bool("keep", false, "keep the run's directory (repositories, databases, logs)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the timed part to this file")
	fs.StringVar(&o.Trace, "trace", "", "write an execution trace of the timed part to this file (go tool trace)")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write a heap (allocation) profile after the timed part to this file")
	fs.BoolVar(&o.Soak, "soak", false, "soak: short retention (stream max age 1m, inbox 1m15s, sent 15s, pruning every 5s, unless set), 50,000 sagas unless --prs, a 3h --timeout unless set; samples every store's size and judges whether it plateaus")
	fs.DurationVar(&o.SampleEvery, "sample-every", bench.SoakSampleEvery, "with --soak: pause between samples of the stores' sizes")
	against := fs.String("against", "", "compare this build with the prsaga binary `BIN`: --runs runs of each --workload (W1,W2 allowed, and the default) with each build, rotated run by run, each in a new directory; prints every run and, per workload, the medians and this build's ratio to BIN's")
	runs := fs.Int("runs", 5, "with --against: runs of each workload with each build")
	target := fs.Float64("target", 0, "with --against: count the picks of three runs of each build whose ratio of medians is at or under this (e.g. 0.5)")
	_, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return parseError(err, stderr)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *against != "" {
		return cmdBenchCompare(ctx, fs, given, compareFlags{
			against: *against, workloads: o.Workload, dataDir: cfg.DataDir, runs: *runs, target: *target,
			keep: *keep, quiet: *quiet, asJSON: *asJSON,
		}, stdout, stderr)
	}
	for _, f := range []string{"runs", "target"} {
		if given[f] {
			fmt.Fprintf(stderr, "prsaga bench: --%s needs --against\n", f)
			return exitUsage
		}
	}
	if strings.Contains(o.Workload, ",") {
		fmt.Fprintf(stderr, "prsaga bench: --workload %s: one workload, unless --against compares two builds\n", o.Workload)
		return exitUsage
	}
	if o.Soak {
		cfg = bench.SoakConfig(cfg, func(env string) bool {
			return getenv(env) != "" || given[strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "PRSAGA_")), "_", "-")]
		})
		if cfg.RetentionInbox < cfg.StreamMaxAge {
			fmt.Fprintf(stderr, "prsaga bench: --soak: inbox retention %s is shorter than the stream's max age %s\n", cfg.RetentionInbox, cfg.StreamMaxAge)
			return exitUsage
		}
		if !given["prs"] {
			o.N = 50000
		}
		if !given["timeout"] {
			o.Timeout = 3 * time.Hour
		}
	}
	o.Config = cfg
	// The process's heap floor from its start, as `dev` has it: the run's
	// set-up is part of the process's life.
	gcfloor.Set(bench.HeapFloor(cfg, o.Mode), os.Getenv)
	if !*quiet {
		o.Progress = stderr
	}
	// --data names the run's directory (kept); otherwise a temp dir.
	if given["data"] {
		o.Dir = cfg.DataDir
		if entries, err := os.ReadDir(o.Dir); err == nil && len(entries) > 0 {
			fmt.Fprintf(stderr, "prsaga bench: --data %s is not empty\n", o.Dir)
			return exitUsage
		}
	} else {
		if o.Dir, err = os.MkdirTemp("", "prsaga-bench-"); err != nil {
			fmt.Fprintf(stderr, "prsaga bench: %v\n", err)
			return exitFailed
		}
		if *keep {
			fmt.Fprintf(stderr, "prsaga bench: data in %s\n", o.Dir)
		} else {
			defer os.RemoveAll(o.Dir)
		}
	}
	if o.Mode == bench.ModeProcs {
		if o.Exe, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "prsaga bench: %v\n", err)
			return exitFailed
		}
	}
	res, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga bench: %v\n", err)
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return exitTimeout
		}
		return exitFailed
	}
	if res.Soak != nil && given["data"] {
		// Every sample, for plotting: the printed table shows about 25.
		if b, err := json.MarshalIndent(res, "", "  "); err == nil {
			_ = os.WriteFile(filepath.Join(o.Dir, "soak.json"), b, 0o644)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return exitFailed
		}
	} else {
		printBench(stdout, res)
	}
	switch {
	case res.TimedOut:
		return exitTimeout
	case res.Bad > 0 || res.OK != res.N || len(res.Problems) > 0:
		return exitFailed
	}
	return exitOK
}

// printBench writes the human report; the result line comes last.
func printBench(w io.Writer, r bench.Result) {
	fmt.Fprintf(w, "mode=%s durability=%s workload=%s watchers=%d preload=%d gc-heap-floor=%s elapsed=%.2fs\n",
		r.Mode, r.Durability, r.Workload, r.Watchers, r.Preload, r.GCHeapFloor, r.ElapsedSeconds)
	fmt.Fprintf(w, "peak RSS %.1f MB%s  CPU %.2f s (%.2f ms per saga)  syscalls %s  page faults %s\n",
		mb(r.PeakRSSBytes), timedPeakText(r.TimedPeakRSSBytes), r.CPUSeconds, r.CPUMsPerSaga, syscallsText(r.Syscalls, r.SyscallsPerSaga),
		faultsText(r.PageFaults, r.PageFaultsPerSaga))
	fmt.Fprintf(w, "Go allocations %s\n", allocsText(r.Allocs, r.AllocsPerSaga))
	for _, p := range r.SortedProcesses() {
		fmt.Fprintf(w, "  %-24s peak RSS %7.1f MB%s  CPU %7.2f s  syscalls %s  page faults %s  allocations %s\n",
			p.Name, mb(p.PeakRSSBytes), timedPeakText(p.TimedPeakRSSBytes), p.CPUSeconds, syscallsText(p.Syscalls, p.SyscallsPerSaga),
			faultsText(p.PageFaults, p.PageFaultsPerSaga), allocsText(p.Allocs, p.AllocsPerSaga))
	}
	fmt.Fprintf(w, "  syscalls counted: %s\n", r.SyscallSource)
	if m := r.MemoryAtPeak; m != nil {
		fmt.Fprintf(w, "  RSS at the timed part's peak (%.0fs in): %.1f MB = Go heap objects %.1f + Go heap free %.1f + stacks %.1f + Go runtime %.1f + outside Go (SQLite's C heap …) %.1f + files mapped (the binary, bleve, -shm) %.1f; GC goal %.1f MB\n",
			m.At, mb(m.RSSBytes), mb(m.HeapLiveBytes), mb(m.HeapFreeBytes), mb(m.StacksBytes), mb(m.GoOtherBytes), mb(m.OutsideGoBytes), mb(m.FileBytes), mb(m.HeapGoalBytes))
	}
	fmt.Fprintf(w, "%-50s %10s %10s %10s\n", "step (ledger transition times)", "p50", "p99", "max")
	for _, s := range r.Steps {
		fmt.Fprintf(w, "  %-48s %8.1fms %8.1fms %8.1fms\n", s.Name, s.P50Ms, s.P99Ms, s.MaxMs)
	}
	if len(r.Queries) > 0 {
		fmt.Fprintf(w, "%-50s %10s %10s %10s\n", fmt.Sprintf("ledger reads over %d rows", r.Preload+r.N), "p50", "p99", "max")
		for _, q := range r.Queries {
			if q.Error != "" {
				fmt.Fprintf(w, "  %-48s failed: %s\n", q.Name, q.Error)
			} else {
				fmt.Fprintf(w, "  %-48s %8.2fms %8.2fms %8.2fms\n", q.Name, q.P50Ms, q.P99Ms, q.MaxMs)
			}
			fmt.Fprintf(w, "      %s\n", q.What)
			if q.Plan != "" {
				fmt.Fprintf(w, "      plan: %s\n", q.Plan)
			}
		}
	}
	if r.Soak != nil {
		r.Soak.Format(w)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	fmt.Fprintln(w, r.Line)
}

// timedPeakText is " (timed part N MB)", or nothing when unknown.
func timedPeakText(b int64) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprintf(" (timed part %.1f MB)", mb(b))
}

// syscallsText is "<per saga> per saga (<read> r + <write> w)", or n/a.
func syscallsText(c *bench.SyscallCount, perSaga *float64) string {
	if c == nil {
		return "n/a"
	}
	if perSaga == nil {
		return fmt.Sprintf("%d (%d r + %d w)", c.Total(), c.Read, c.Write)
	}
	return fmt.Sprintf("%.1f per saga (%d r + %d w)", *perSaga, c.Read, c.Write)
}

// faultsText is "X per saga (N)", "N" without ok sagas, or "n/a".
func faultsText(n *int64, perSaga *float64) string {
	switch {
	case n == nil:
		return "n/a"
	case perSaga == nil:
		return fmt.Sprintf("%d", *n)
	}
	return fmt.Sprintf("%.1f per saga (%d)", *perSaga, *n)
}

// allocsText is "X KB in N objects per saga, G collections per saga
// (bytes, objects, collections)", or n/a.
func allocsText(a *bench.AllocCount, perSaga *bench.AllocRate) string {
	switch {
	case a == nil:
		return "n/a"
	case perSaga == nil:
		return fmt.Sprintf("%d bytes, %d objects, %d collections", a.Bytes, a.Objects, a.GCCycles)
	}
	return fmt.Sprintf("%.1f KB in %.0f objects per saga, %.4f collections per saga (%d bytes, %d objects, %d collections)",
		perSaga.Bytes/1024, perSaga.Objects, perSaga.GCCycles, a.Bytes, a.Objects, a.GCCycles)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
