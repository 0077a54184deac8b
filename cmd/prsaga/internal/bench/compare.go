package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Compare is a sitting that compares two builds of prsaga the way
// docs/performance.md does ("Comparing two builds"): each workload run
// Runs times with each build, rotated run by run, every run in a directory
// of its own and nothing deleted until the sitting ends, the page cache's
// dirty data written out before each run.
type Compare struct {
	// This and Against are the two binaries; Against runs first in each
	// rotation. Their `bench --json` must report n, ok, cpu_seconds,
	// p99_ms and sagas_per_second (ca361df's does).
	This, Against string
	Workloads     []string
	Runs          int
	// Args are passed to every run after `bench --workload W --data DIR
	// --json --quiet`.
	Args []string
	// Dir holds the runs' directories, one new one per run.
	Dir string
	// Target, when above zero, is the ratio the summary counts three-run
	// picks against (the method: three runs of each, medians).
	Target float64
	// Progress, when set, gets a line per finished run.
	Progress io.Writer
}

// Builds, as CompareRun.Build names them.
const (
	BuildThis    = "this"
	BuildAgainst = "against"
)

// CompareRun is one run of a sitting.
type CompareRun struct {
	Round          int       `json:"round"`
	Workload       string    `json:"workload"`
	Build          string    `json:"build"`
	Started        time.Time `json:"started"`
	Dir            string    `json:"dir"`
	CPUMsPerSaga   float64   `json:"cpu_ms_per_saga"`
	P99Ms          float64   `json:"p99_ms"`
	SagasPerSecond float64   `json:"sagas_per_second"`
	N              int       `json:"n"`
	OK             int       `json:"ok"`
	// Error says why the run does not count (its exit, bad sagas).
	Error string `json:"error,omitempty"`
}

// CompareResult is a whole sitting.
type CompareResult struct {
	This      string           `json:"this"`
	Against   string           `json:"against"`
	Target    float64          `json:"target,omitempty"`
	Runs      []CompareRun     `json:"runs"`
	Summaries []CompareSummary `json:"summaries"`
}

// Failed counts the runs that do not count.
func (r CompareResult) Failed() int {
	n := 0
	for _, run := range r.Runs {
		if run.Error != "" {
			n++
		}
	}
	return n
}

// RunCompare runs the sitting. It stops early only when ctx ends; a run
// that fails is recorded (CompareRun.Error) and the sitting goes on.
func RunCompare(ctx context.Context, c Compare) (CompareResult, error) {
	if c.Runs < 1 {
		return CompareResult{}, errors.New("compare: at least one run of each build")
	}
	res := CompareResult{This: c.This, Against: c.Against, Target: c.Target}
	builds := []struct{ name, bin string }{{BuildAgainst, c.Against}, {BuildThis, c.This}}
sitting:
	for round := 1; round <= c.Runs; round++ {
		for _, w := range c.Workloads {
			for _, b := range builds {
				if ctx.Err() != nil {
					break sitting // summarize what ran
				}
				settleWriteback(ctx)
				run := compareRun(ctx, c, round, w, b.name, b.bin)
				if err := ctx.Err(); err != nil {
					run.Error = "stopped: " + err.Error() // killed: it does not count
				}
				res.Runs = append(res.Runs, run)
				if c.Progress != nil {
					fmt.Fprintln(c.Progress, run.line())
				}
			}
		}
	}
	res.Summaries = summarize(res.Runs, c.Workloads, c.Target)
	return res, ctx.Err()
}

func compareRun(ctx context.Context, c Compare, round int, workload, build, bin string) CompareRun {
	run := CompareRun{Round: round, Workload: workload, Build: build, Started: time.Now()}
	dir, err := os.MkdirTemp(c.Dir, fmt.Sprintf("%02d-%s-%s-", round, workload, build))
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Dir = dir
	args := append([]string{"bench", "--workload", workload, "--data", dir, "--json", "--quiet"}, c.Args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	dieWithParent(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		N              int     `json:"n"`
		OK             int     `json:"ok"`
		Bad            int     `json:"bad"`
		CPUSeconds     float64 `json:"cpu_seconds"`
		P99Ms          float64 `json:"p99_ms"`
		SagasPerSecond float64 `json:"sagas_per_second"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		run.Error = fmt.Sprintf("%s bench printed no result (%v): %s", bin, orExit(runErr, err), lastLines(stderr.String(), 3))
		return run
	}
	run.N, run.OK, run.P99Ms, run.SagasPerSecond = out.N, out.OK, out.P99Ms, out.SagasPerSecond
	if out.OK > 0 {
		run.CPUMsPerSaga = out.CPUSeconds * 1000 / float64(out.OK)
	}
	switch {
	case out.OK != out.N || out.Bad > 0: // what its exit 1 says, in numbers
		run.Error = fmt.Sprintf("ok=%d bad=%d of %d", out.OK, out.Bad, out.N)
	case runErr != nil:
		run.Error = fmt.Sprintf("%s bench: %v: %s", bin, runErr, lastLines(stderr.String(), 3))
	}
	return run
}

// orExit is how the run failed if it did, else why its output did not
// decode.
func orExit(runErr, decodeErr error) error {
	if runErr != nil {
		return runErr
	}
	return decodeErr
}

// lastLines is the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func (r CompareRun) line() string {
	s := fmt.Sprintf("%s %d %s %-7s", r.Started.Format("15:04:05"), r.Round, r.Workload, r.Build)
	if r.Error != "" {
		return s + " failed: " + r.Error
	}
	return s + fmt.Sprintf(" %.2f ms CPU per saga  p99 %.1f ms  %.1f sagas/s", r.CPUMsPerSaga, r.P99Ms, r.SagasPerSecond)
}

// settleWriteback writes the page cache's dirty data out until under 2 MB
// of it is left (ten seconds at most: other processes may keep writing): a
// run's start should not pay for the writeback of the run before it.
func settleWriteback(ctx context.Context) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		syncFiles()
		kb, ok := dirtyKB()
		if !ok || kb < 2000 || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dirtyKB reads Dirty from /proc/meminfo (false where there is none).
func dirtyKB() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(l, "Dirty: %d kB", &kb); err == nil {
			return kb, true
		}
	}
	return 0, false
}

// RemoveRuns removes the sitting's run directories.
func RemoveRuns(r CompareResult) error {
	var errs []error
	for _, run := range r.Runs {
		if run.Dir != "" {
			errs = append(errs, os.RemoveAll(filepath.Clean(run.Dir)))
		}
	}
	return errors.Join(errs...)
}
