package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/bench"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// resultLine is BENCH.md's result line.
var resultLine = regexp.MustCompile(`^prsaga (W1|W2) N=(\d+) C=(\d+) R=(\d+): \d+\.\d sagas/s p50=\d+\.\dms p99=\d+\.\dms ok=(\d+) bad=(\d+)$`)

// lastLine returns the output's last line and checks it is the result line
// of a run of want with every saga ok.
func checkResult(t *testing.T, out, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	m := resultLine.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q is not the result line; output:\n%s", last, out)
	}
	if got := strings.Join(m[1:5], " "); got != want {
		t.Errorf("result line is for %s, want %s", got, want)
	}
	if n := strings.Fields(want)[1]; m[5] != n || m[6] != "0" {
		t.Errorf("ok=%s bad=%s, want ok=%s bad=0; output:\n%s", m[5], m[6], n, out)
	}
}

func TestBenchInproc(t *testing.T) {
	for _, w := range []string{"W1", "W2"} {
		t.Run(w, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"bench", "--workload", w, "--prs", "20", "--concurrency", "4", "--repos", "2", "--timeout", "90s"},
				func(string) string { return "" }, &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			checkResult(t, stdout.String(), w+" 20 4 2")
			checkSyscallsText(t, stdout.String(), 1)
			if !strings.Contains(stderr.String(), "20/20") {
				t.Errorf("no progress bar on stderr:\n%s", stderr.String())
			}
		})
	}
}

// benchJSON runs `prsaga bench` with args, which ask for --json, and
// returns the result it printed and its stderr; any other exit than 0
// fails the test.
func benchJSON(ctx context.Context, t *testing.T, args ...string) (bench.Result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, append([]string{"bench"}, args...), func(string) string { return "" }, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var r bench.Result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("--json output is not a result object: %v\n%s", err, stdout.String())
	}
	return r, stderr.String()
}

func TestBenchJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cpuProfile, trace := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "run.trace")
	r, stderr := benchJSON(ctx, t, "--workload", "W2", "--prs", "6", "--concurrency", "3", "--repos", "2", "--json", "--quiet",
		"--preload", "500", "--watchers", "1", "--cpuprofile", cpuProfile, "--trace", trace)
	if !resultLine.MatchString(r.Line) || r.OK != 6 || r.Bad != 0 || r.Workload != "W2" || len(r.Steps) == 0 {
		t.Errorf("result: line %q ok=%d bad=%d workload %s steps %d", r.Line, r.OK, r.Bad, r.Workload, len(r.Steps))
	}
	checkSyscallsJSON(t, r)
	checkPeaksJSON(t, r)
	// The run says which heap floor its process kept: the default of five
	// services, unless the environment leaves the collector to GOGC.
	if want := "80MiB"; gcfloor.Wanted(os.Getenv) && r.GCHeapFloor != want || !gcfloor.Wanted(os.Getenv) && !strings.HasPrefix(r.GCHeapFloor, "off") {
		t.Errorf("gc_heap_floor %q, want %s", r.GCHeapFloor, want)
	}
	if len(r.Queries) != 6 {
		t.Fatalf("preload queries: got %d, want 6: %+v", len(r.Queries), r.Queries)
	}
	for _, q := range r.Queries {
		if q.Count == 0 || q.Error != "" {
			t.Errorf("query %q not timed: %s", q.Name, q.Error)
		}
	}
	if plan := r.Queries[3].Plan; !strings.Contains(plan, "idx_saga_state") {
		t.Errorf("the watchdog query's plan %q does not use idx_saga_state", plan)
	}
	if strings.Contains(stderr, "[") {
		t.Errorf("--quiet still drew a progress bar:\n%s", stderr)
	}
	checkProfiles(ctx, t, cpuProfile, trace)
}

// checkProfiles checks that a run's --cpuprofile and --trace files were
// written whole: go tool pprof and go tool trace read them.
func checkProfiles(ctx context.Context, t *testing.T, cpuProfile, trace string) {
	t.Helper()
	for _, args := range [][]string{
		{"tool", "pprof", "-top", cpuProfile},
		{"tool", "trace", "-pprof=sched", trace},
	} {
		out, err := exec.CommandContext(ctx, goCommand(), args...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
		} else if len(out) == 0 {
			t.Errorf("go %s printed nothing", strings.Join(args, " "))
		}
	}
}

func TestBenchRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--workload", "W3"},
		{"bench", "--mode", "threads"},
		{"bench", "--prs", "0"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != exitFailed && code != exitUsage {
			t.Errorf("%v: exit code %d, want a failure", args, code)
		}
	}
}

// The deployment shape: a `prsaga serve` process per service, against the
// bench's embedded NATS. Builds the binary first.
func TestBenchProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts five processes")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--mode", "procs", "--workload", "W2", "--prs", "10", "--concurrency", "4", "--repos", "2", "--timeout", "90s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench --mode procs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	checkResult(t, stdout.String(), "W2 10 4 2")
	for _, svc := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		if !strings.Contains(stdout.String(), svc) {
			t.Errorf("no usage line for the %s process:\n%s", svc, stdout.String())
		}
	}
	checkSyscallsText(t, stdout.String(), 6)
	if gcfloor.Wanted(os.Getenv) && !strings.Contains(stdout.String(), " gc-heap-floor=16MiB/process ") {
		t.Errorf("the report does not give each process's heap floor (16MiB/process):\n%s", stdout.String())
	}
	// Every child was stopped: none is left serving.
	if out, _ := exec.Command("pgrep", "-f", bin+" serve").Output(); len(out) > 0 {
		t.Errorf("service processes left running: %s", out)
	}
}

// checkSyscallsJSON checks the syscall figures of a run: on Linux every
// process made read/write syscalls in the timed part (each saga writes its
// SQLite WAL and talks to NATS), elsewhere they are absent, not zero.
func checkSyscallsJSON(t *testing.T, r bench.Result) {
	t.Helper()
	if runtime.GOOS != "linux" {
		if r.Syscalls != nil || r.SyscallsPerSaga != nil || !strings.HasPrefix(r.SyscallSource, "n/a") {
			t.Errorf("syscalls without /proc: %+v %v %q", r.Syscalls, r.SyscallsPerSaga, r.SyscallSource)
		}
		return
	}
	if r.Syscalls == nil || r.SyscallsPerSaga == nil {
		t.Fatalf("no syscall figures on Linux: %+v %v %q", r.Syscalls, r.SyscallsPerSaga, r.SyscallSource)
	}
	if r.Syscalls.Read <= 0 || r.Syscalls.Write <= 0 {
		t.Errorf("syscalls read %d write %d, want both > 0", r.Syscalls.Read, r.Syscalls.Write)
	}
	if want := float64(r.Syscalls.Total()) / float64(r.OK); *r.SyscallsPerSaga != want {
		t.Errorf("syscalls per saga %v, want %v", *r.SyscallsPerSaga, want)
	}
	// Plausible: a saga writes ten-odd transactions and as many messages;
	// a million calls per saga would be a counter read wrongly.
	if *r.SyscallsPerSaga < 10 || *r.SyscallsPerSaga > 1e6 {
		t.Errorf("implausible %v syscalls per saga", *r.SyscallsPerSaga)
	}
	if r.SyscallSource != bench.SyscallSource {
		t.Errorf("syscall source %q", r.SyscallSource)
	}
	var sum int64
	for _, p := range r.Processes {
		if p.Syscalls == nil || p.Syscalls.Total() <= 0 {
			t.Errorf("process %s: syscalls %+v", p.Name, p.Syscalls)
			continue
		}
		sum += p.Syscalls.Total()
	}
	if sum != r.Syscalls.Total() {
		t.Errorf("processes' syscalls sum to %d, the run's to %d", sum, r.Syscalls.Total())
	}
	if r.CPUMsPerSaga <= 0 {
		t.Errorf("cpu_ms_per_saga %v", r.CPUMsPerSaga)
	}
	checkFaultsJSON(t, r)
	checkAllocsJSON(t, r)
}

// checkAllocsJSON checks the Go allocation figures of a run: every process
// allocated in the timed part (its own runtime/metrics, or a service
// process's /metrics), the run's count is the sum of its processes', and
// the per-saga rate is that count per ok saga. Collections may be none in
// a short run.
func checkAllocsJSON(t *testing.T, r bench.Result) {
	t.Helper()
	if r.Allocs == nil || r.AllocsPerSaga == nil {
		t.Fatalf("no allocation figures: %v %v", r.Allocs, r.AllocsPerSaga)
	}
	var sum bench.AllocCount
	for _, p := range r.Processes {
		if p.Allocs == nil || p.Allocs.Bytes <= 0 || p.Allocs.Objects <= 0 || p.Allocs.GCCycles < 0 {
			t.Errorf("process %s: allocations %+v", p.Name, p.Allocs)
			continue
		}
		sum.Bytes += p.Allocs.Bytes
		sum.Objects += p.Allocs.Objects
		sum.GCCycles += p.Allocs.GCCycles
	}
	if sum != *r.Allocs {
		t.Errorf("processes' allocations sum to %+v, the run's to %+v", sum, *r.Allocs)
	}
	n := float64(r.OK)
	if want := (bench.AllocRate{Bytes: float64(r.Allocs.Bytes) / n, Objects: float64(r.Allocs.Objects) / n, GCCycles: float64(r.Allocs.GCCycles) / n}); *r.AllocsPerSaga != want {
		t.Errorf("allocations per saga %+v, want %+v", *r.AllocsPerSaga, want)
	}
	// Plausible: a saga is ten messages and a few dozen rows, each some KB
	// of Go heap; a GB per saga would be a counter read wrongly.
	if r.AllocsPerSaga.Bytes < 1<<10 || r.AllocsPerSaga.Bytes > 1<<30 {
		t.Errorf("implausible %v bytes allocated per saga", r.AllocsPerSaga.Bytes)
	}
}

// checkFaultsJSON checks the page fault figures of a run on Linux: every
// process touched memory it had not touched before in the timed part (its
// heap grows with the sagas' messages and rows), and the run's count is the
// sum of its processes'.
func checkFaultsJSON(t *testing.T, r bench.Result) {
	t.Helper()
	if r.PageFaults == nil || r.PageFaultsPerSaga == nil {
		t.Fatalf("no page fault figures on Linux: %v %v", r.PageFaults, r.PageFaultsPerSaga)
	}
	if want := float64(*r.PageFaults) / float64(r.OK); *r.PageFaults <= 0 || *r.PageFaultsPerSaga != want {
		t.Errorf("page faults %d, %v per saga (want %v)", *r.PageFaults, *r.PageFaultsPerSaga, want)
	}
	var sum int64
	for _, p := range r.Processes {
		if p.PageFaults == nil || *p.PageFaults <= 0 {
			t.Errorf("process %s: page faults %v", p.Name, p.PageFaults)
			continue
		}
		sum += *p.PageFaults
	}
	if sum != *r.PageFaults {
		t.Errorf("processes' page faults sum to %d, the run's to %d", sum, *r.PageFaults)
	}
}

// syscallsPerSaga is the report's "syscalls X per saga (R r + W w)".
var syscallsPerSaga = regexp.MustCompile(`syscalls (\d+\.\d) per saga \((\d+) r \+ (\d+) w\)`)

// allocsPerSaga is the report's "X KB in N objects per saga, G collections
// per saga (bytes, objects, collections)".
var allocsPerSaga = regexp.MustCompile(`(\d+\.\d) KB in (\d+) objects per saga, (\d+\.\d{4}) collections per saga \((\d+) bytes, (\d+) objects, (\d+) collections\)`)

// faultsPerSaga is the report's "page faults X per saga (N)".
var faultsPerSaga = regexp.MustCompile(`page faults (\d+\.\d) per saga \((\d+)\)`)

// checkSyscallsText checks the text report: the run's line and each of
// its processes' lines carry syscalls per saga (> 0 on Linux, n/a
// elsewhere), and the report says what was counted.
func checkSyscallsText(t *testing.T, out string, processes int) {
	t.Helper()
	if !strings.Contains(out, "syscalls counted: ") {
		t.Errorf("the report does not say which syscalls it counted:\n%s", out)
	}
	if runtime.GOOS != "linux" {
		if n := strings.Count(out, "syscalls n/a"); n != processes+1 {
			t.Errorf("%d n/a syscall figures, want %d:\n%s", n, processes+1, out)
		}
		if n := strings.Count(out, "page faults n/a"); n != processes+1 {
			t.Errorf("%d n/a page fault figures, want %d:\n%s", n, processes+1, out)
		}
		return
	}
	if as := allocsPerSaga.FindAllStringSubmatch(out, -1); len(as) != processes+1 {
		t.Errorf("%d allocation figures, want %d (the run and each process):\n%s", len(as), processes+1, out)
	}
	fs := faultsPerSaga.FindAllStringSubmatch(out, -1)
	if len(fs) != processes+1 {
		t.Errorf("%d page fault figures, want %d (the run and each process):\n%s", len(fs), processes+1, out)
	}
	for _, m := range fs {
		if per, _ := strconv.ParseFloat(m[1], 64); per <= 0 {
			t.Errorf("implausible page fault figure %q:\n%s", m[0], out)
		}
	}
	if !strings.Contains(out, "syscalls counted: read+write syscalls: syscr + syscw of /proc/[pid]/io") {
		t.Errorf("the report does not name /proc/<pid>/io's syscr and syscw:\n%s", out)
	}
	ms := syscallsPerSaga.FindAllStringSubmatch(out, -1)
	if len(ms) != processes+1 {
		t.Fatalf("%d syscall figures, want %d (the run and each process):\n%s", len(ms), processes+1, out)
	}
	for _, m := range ms {
		per, _ := strconv.ParseFloat(m[1], 64)
		r, _ := strconv.ParseInt(m[2], 10, 64)
		w, _ := strconv.ParseInt(m[3], 10, 64)
		if per <= 0 || r+w <= 0 {
			t.Errorf("implausible syscall figure %q:\n%s", m[0], out)
		}
	}
}

// checkPeaksJSON checks the peak RSS figures: on Linux the timed part's
// peak is known for every process and at most the whole run's.
func checkPeaksJSON(t *testing.T, r bench.Result) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	if r.TimedPeakRSSBytes <= 0 || r.TimedPeakRSSBytes > r.PeakRSSBytes {
		t.Errorf("timed part's peak RSS %d, the run's %d", r.TimedPeakRSSBytes, r.PeakRSSBytes)
	}
	for _, p := range r.Processes {
		if p.TimedPeakRSSBytes <= 0 || p.TimedPeakRSSBytes > p.PeakRSSBytes {
			t.Errorf("%s: timed part's peak RSS %d, the run's %d", p.Name, p.TimedPeakRSSBytes, p.PeakRSSBytes)
		}
	}
}
