package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prsaga/prsaga/platform/config"
)

// Workloads (BENCH.md).
const (
	W1 = "W1" // independent: PR i fast-forwards its own branch base/i
	W2 = "W2" // shared main: every PR of a repository merges into its main
)

// Modes.
const (
	ModeInproc = "inproc" // all services in this process
	ModeProcs  = "procs"  // each service as a `prsaga serve` child process
)

// Options of one run.
type Options struct {
	Workload    string // W1 or W2
	N           int    // PRs (sagas) in all
	Concurrency int    // at most this many sagas in flight
	Repos       int    // repositories; PR i lives in repository i mod Repos
	Mode        string // inproc or procs
	// Preload inserts this many finished (MERGED) sagas into the ledger's
	// database before the run, then measures the ledger's read paths.
	Preload int
	// Watchers per repository: webhook receivers served by the benchmark.
	Watchers int
	// Timeout bounds the whole run, setup and checks included.
	Timeout time.Duration
	// Dir holds everything (repositories, databases, logs); it must be
	// empty or not exist.
	Dir string
	// Exe is the prsaga binary started as `Exe serve <service>` in procs mode.
	Exe string
	// Config is the services' configuration; the benchmark overrides the
	// data, store, repos, log and HTTP settings to live under Dir.
	Config config.Config
	// Progress receives a progress bar and phase notes (nil: none).
	Progress io.Writer
	// CPUProfile and MemProfile, when set, are written for the timed part
	// (inproc mode profiles the services too; procs mode only the driver).
	CPUProfile, MemProfile string
	// Trace, when set, receives an execution trace of the timed part
	// (runtime/trace: where goroutines wait, not only where CPU goes).
	Trace string
	// QuerySamples is how often each preload query is timed; default 200.
	QuerySamples int
	// Soak samples the size of every store every SampleEvery (default
	// SoakSampleEvery) through the run and judges whether what retention
	// bounds plateaued (soak.go); Config should carry short retention
	// (SoakConfig).
	Soak        bool
	SampleEvery time.Duration
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.Workload != W1 && o.Workload != W2 {
		errs = append(errs, fmt.Errorf("--workload %q is not W1 or W2", o.Workload))
	}
	if o.Mode != ModeInproc && o.Mode != ModeProcs {
		errs = append(errs, fmt.Errorf("--mode %q is not inproc or procs", o.Mode))
	}
	if o.N < 1 {
		errs = append(errs, fmt.Errorf("--prs %d must be at least 1", o.N))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d must be at least 1", o.Concurrency))
	}
	if o.Repos < 1 || o.Repos > 10000 {
		errs = append(errs, fmt.Errorf("--repos %d must be between 1 and 10000", o.Repos))
	}
	if o.Preload < 0 {
		errs = append(errs, fmt.Errorf("--preload %d must not be negative", o.Preload))
	}
	if o.Watchers < 0 || o.Watchers > 100 {
		errs = append(errs, fmt.Errorf("--watchers %d must be between 0 and 100", o.Watchers))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("--timeout must be positive"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("bench: Dir is required"))
	}
	if o.Soak && o.Config.PruneInterval <= 0 {
		errs = append(errs, errors.New("--soak needs pruning: PRSAGA_PRUNE_INTERVAL must be positive"))
	}
	if o.Mode == ModeProcs && o.Exe == "" {
		errs = append(errs, errors.New("bench: Exe is required in procs mode"))
	}
	return errors.Join(errs...)
}
