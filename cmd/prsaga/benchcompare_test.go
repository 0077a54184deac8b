package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/bench"
)

// A sitting of the built binary against a copy of itself: every run
// counted, the builds rotated run by run, the summary made of the runs it
// lists, the runs' directories removed at the end (kept under --data); and
// one against a build that cannot run the benchmark.
func TestBenchAgainst(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and runs thirteen benchmarks (about a minute); make test runs it")
	}
	bin := buildBinary(t)
	other := filepath.Join(t.TempDir(), "prsaga-other")
	if err := copyFile(bin, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(other, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res := compareJSON(ctx, t, bin, "--against", other, "--runs", "2", // W1 and W2 by default
		"--prs", "8", "--concurrency", "4", "--repos", "2", "--timeout", "90s", "--target", "0.5")

	if res.This != bin || res.Against != other {
		t.Errorf("builds %q against %q, want %q against %q", res.This, res.Against, bin, other)
	}
	var order []string
	for _, r := range res.Runs {
		order = append(order, r.Workload+" "+r.Build)
		if r.Error != "" || r.N != 8 || r.OK != 8 || r.CPUMsPerSaga <= 0 || r.P99Ms <= 0 || r.SagasPerSecond <= 0 {
			t.Errorf("run %+v: want 8 ok sagas with their figures", r)
		}
		if _, err := os.Stat(r.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run directory %s left behind (%v)", r.Dir, err)
		}
	}
	rotation := "W1 against,W1 this,W2 against,W2 this"
	if got := strings.Join(order, ","); got != rotation+","+rotation {
		t.Errorf("runs in the order %s, want two rotations of %s", got, rotation)
	}
	if len(res.Summaries) != 2 {
		t.Fatalf("summaries %+v, want W1 and W2", res.Summaries)
	}
	for i, s := range res.Summaries {
		w := []string{"W1", "W2"}[i]
		var this, against []float64
		for _, r := range res.Runs {
			if r.Workload == w && r.Build == bench.BuildThis {
				this = append(this, r.CPUMsPerSaga)
			} else if r.Workload == w {
				against = append(against, r.CPUMsPerSaga)
			}
		}
		wantThis, wantAgainst := (this[0]+this[1])/2, (against[0]+against[1])/2
		if s.Workload != w || s.This.CPUMsPerSaga != wantThis || s.Against.CPUMsPerSaga != wantAgainst || s.Ratio != wantThis/wantAgainst {
			t.Errorf("%s summary %+v, want medians %v and %v of the runs and their ratio", w, s, wantThis, wantAgainst)
		}
		if len(s.Pairs) != 2 || s.Pairs[0] != this[0]/against[0] || s.Pairs[1] != this[1]/against[1] {
			t.Errorf("%s pairs %v, want each rotation's ratio", w, s.Pairs)
		}
		if s.Picks != 0 {
			t.Errorf("%s: %d picks of three runs out of two", w, s.Picks)
		}
	}

	// Under --data the runs' directories are kept, each a whole run's.
	data := filepath.Join(t.TempDir(), "sitting")
	res = compareJSON(ctx, t, bin, "--against", other, "--runs", "1", "--workload", "W1",
		"--prs", "4", "--concurrency", "2", "--repos", "2", "--timeout", "90s", "--data", data)
	if len(res.Runs) != 2 {
		t.Fatalf("runs %+v, want one of each build", res.Runs)
	}
	for _, r := range res.Runs {
		if filepath.Dir(r.Dir) != data {
			t.Errorf("run directory %s is not under --data %s", r.Dir, data)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "repos", "bench", "r00.git", "HEAD")); err != nil {
			t.Errorf("run directory %s does not hold the run's repositories: %v", r.Dir, err)
		}
	}

	checkAgainstFailingBuild(t, bin)
	checkAgainstInterrupted(t, bin)
}

// An interrupted sitting stops its run, says so, summarizes what ran,
// removes the runs' directories and exits 3.
func checkAgainstInterrupted(t *testing.T, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--against", bin, "--runs", "3", "--workload", "W1",
		"--prs", "100000", "--concurrency", "4", "--repos", "2", "--timeout", "90s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The header names the sitting's directory. Interrupt once the first
	// run is under way (its bench is writing repositories): a run of
	// 100,000 sagas is then far from done.
	out := bufio.NewReader(stdout)
	header, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no header: %v", err)
	}
	dir := header[strings.LastIndex(header, " in ")+4 : len(header)-1]
	waitCond(t, time.Minute, "the first run writing its repositories", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "01-W1-against-*", "repos"))
		return len(m) > 0
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitTimeout {
		t.Fatalf("exit %v, want %d\nstdout:\n%s%s\nstderr:\n%s", err, exitTimeout, header, rest, stderr.String())
	}
	for _, want := range []string{"1 W1 against failed: stopped: context canceled", "1 of 1 runs failed"} {
		if !strings.Contains(string(rest), want) {
			t.Errorf("output lacks %q:\n%s%s", want, header, rest)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sitting's directory %q is left behind (%v)", dir, err)
	}
}

// A build that cannot run the benchmark: its runs are reported with why,
// the sitting goes on and exits 1.
func checkAgainstFailingBuild(t *testing.T, bin string) {
	t.Helper()
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'no bench here' >&2\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--against", broken, "--runs", "1", "--workload", "W1",
		"--prs", "4", "--concurrency", "2", "--repos", "2", "--timeout", "60s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailed {
		t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, exitFailed, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"1 W1 against failed: " + broken + " bench printed no result (exit status 7): no bench here",
		"1 of 2 runs failed and do not count",
		"against 0.00 (no run counted)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestBenchAgainstUsage(t *testing.T) {
	notExe := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notExe, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "3"}, "--runs needs --against"},
		{[]string{"--target", "0.5"}, "--target needs --against"},
		{[]string{"--workload", "W1,W2"}, "one workload, unless --against"},
		{[]string{"--against", notExe}, "is not an executable file"},
		{[]string{"--against", filepath.Join(t.TempDir(), "none")}, "no such file"},
		{[]string{"--against", "/bin/sh", "--workload", "W3"}, `--workload "W3": W1, W2 or W1,W2`},
		{[]string{"--against", "/bin/sh", "--runs", "0"}, "--runs 0: at least 1"},
		{[]string{"--against", "/bin/sh", "--target", "-1"}, "--target -1: a ratio, or 0 for none"},
		{[]string{"--against", "/bin/sh", "--cpuprofile", "x.prof"}, "--cpuprofile applies to one run"},
		{[]string{"--against", "/bin/sh", "--soak"}, "--soak applies to one run"},
	} {
		code, _, errOut := runCLI(t, append([]string{"bench"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, exitUsage, c.want)
		}
	}
}

// compareJSON runs `bin bench --json args...` and decodes its sitting.
func compareJSON(ctx context.Context, t *testing.T, bin string, args ...string) bench.CompareResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"bench", "--json", "--quiet"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	var res bench.CompareResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("--json output is not a sitting: %v\n%s", err, stdout.String())
	}
	return res
}
