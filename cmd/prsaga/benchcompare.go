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

	"github.com/prsaga/prsaga/cmd/prsaga/internal/bench"
)

// compareOwnFlags are set by the sitting for every run, or mean nothing
// to a single run; every other flag given is passed on to each run.
var compareOwnFlags = map[string]bool{
	"against": true, "runs": true, "target": true, "workload": true, "data": true,
	"json": true, "quiet": true, "keep": true,
}

// compareRefused cannot serve a sitting: a profile or trace of one run, a
// soak that runs for hours.
var compareRefused = []string{"cpuprofile", "memprofile", "trace", "soak", "sample-every"}

// compareFlags are bench's flags that shape a sitting.
type compareFlags struct {
	against, workloads, dataDir string
	runs                        int
	target                      float64
	keep, quiet, asJSON         bool
}

// cmdBenchCompare runs `prsaga bench --against BIN`: a sitting of
// alternating runs of this build and BIN (docs/performance.md, "Comparing
// two builds"). fs holds bench's parsed flags, given those set. Exit codes:
// 0 every run counted; 1 some did not; 2 usage; 3 interrupted.
func cmdBenchCompare(ctx context.Context, fs *flag.FlagSet, given map[string]bool, f compareFlags, stdout, stderr io.Writer) int {
	usage := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "prsaga bench --against: "+format+"\n", args...)
		return exitUsage
	}
	for _, f := range compareRefused {
		if given[f] {
			return usage("--%s applies to one run; run it alone", f)
		}
	}
	if f.runs < 1 {
		return usage("--runs %d: at least 1", f.runs)
	}
	if f.target < 0 {
		return usage("--target %g: a ratio, or 0 for none", f.target)
	}
	c := bench.Compare{Runs: f.runs, Target: f.target}
	if !given["workload"] {
		f.workloads = bench.W1 + "," + bench.W2 // a sitting covers both unless told
	}
	for _, w := range strings.Split(f.workloads, ",") {
		if w != bench.W1 && w != bench.W2 {
			return usage("--workload %q: W1, W2 or W1,W2", f.workloads)
		}
		c.Workloads = append(c.Workloads, w)
	}
	var err error
	if c.Against, err = executable(f.against); err != nil {
		return usage("%v", err)
	}
	if c.This, err = os.Executable(); err != nil {
		fmt.Fprintf(stderr, "prsaga bench --against: %v\n", err)
		return exitFailed
	}
	fs.Visit(func(fl *flag.Flag) {
		if !compareOwnFlags[fl.Name] {
			c.Args = append(c.Args, "--"+fl.Name+"="+fl.Value.String())
		}
	})

	// --data names the directory that holds the runs' (kept); otherwise a
	// temp dir, removed at the end unless --keep.
	if given["data"] {
		if entries, err := os.ReadDir(f.dataDir); err == nil && len(entries) > 0 {
			return usage("--data %s is not empty", f.dataDir)
		}
		if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
			fmt.Fprintf(stderr, "prsaga bench --against: %v\n", err)
			return exitFailed
		}
		c.Dir, f.keep = f.dataDir, true
	} else if c.Dir, err = os.MkdirTemp("", "prsaga-compare-"); err != nil {
		fmt.Fprintf(stderr, "prsaga bench --against: %v\n", err)
		return exitFailed
	}
	switch {
	case !f.asJSON:
		c.Progress = stdout
	case !f.quiet:
		c.Progress = stderr
	}
	if c.Progress != nil {
		n := fmt.Sprintf("%d runs", f.runs)
		if f.runs == 1 {
			n = "one run"
		}
		fmt.Fprintf(c.Progress, "%s of %s with each build, rotated (against first), in %s\n",
			n, strings.Join(c.Workloads, " and "), c.Dir)
	}

	res, err := bench.RunCompare(ctx, c)
	if f.keep {
		fmt.Fprintf(stderr, "prsaga bench --against: the runs' directories are kept in %s\n", c.Dir)
	} else {
		// After the sitting, never during it: on ext4 without a journal
		// every file created in the next minutes scans past the inodes
		// freed here (docs/performance.md, "Comparing two builds").
		if rmErr := errors.Join(bench.RemoveRuns(res), os.Remove(c.Dir)); rmErr != nil {
			fmt.Fprintf(stderr, "prsaga bench --against: removing the runs' directories: %v\n", rmErr)
		} else {
			fmt.Fprintln(stderr, "prsaga bench --against: the runs' directories are removed; wait a few minutes before the next sitting on ext4 without a journal")
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(res); encErr != nil {
			return exitFailed
		}
	} else {
		res.Format(stdout)
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "prsaga bench --against: stopped: %v\n", err)
		return exitTimeout
	case res.Failed() > 0:
		return exitFailed
	}
	return exitOK
}

// executable is path made absolute, if it names an executable file.
func executable(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", err
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return abs, nil
}
