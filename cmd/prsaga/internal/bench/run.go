package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// maxProblems caps the problems listed in a result.
const maxProblems = 20

// checkGrace bounds the checks after a run that hit its timeout, so that
// the report still says which sagas finished.
const checkGrace = 30 * time.Second

// Run runs one benchmark. An error means the run could not be carried out
// (bad options, a service that would not start, an interrupt); sagas that
// did not finish, or a world that does not check out, are reported in the
// Result (Bad, Problems, TimedOut) with a nil error.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.QuerySamples <= 0 {
		o.QuerySamples = 200
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = SoakSampleEvery
	}
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cfg := o.Config
	if o.Watchers > 0 {
		cfg.WebhookAllowPrivate = true // the receivers are on loopback
	}
	res := Result{
		Workload: o.Workload, Mode: o.Mode, Durability: cfg.Durability,
		N: o.N, Concurrency: o.Concurrency, Repos: o.Repos, Watchers: o.Watchers, Preload: o.Preload,
		GCHeapFloor: gcFloorText(cfg, o.Mode, os.Getenv),
	}
	reposDir := filepath.Join(o.Dir, "repos")
	var ledgerDB string
	if o.Mode == ModeInproc {
		cfg = inprocConfig(cfg, o.Dir)
		ledgerDB = filepath.Join(o.Dir, "data", "db", "ledger.sqlite")
	} else {
		cfg.ReposDir = reposDir
		ledgerDB = filepath.Join(serviceDir(o.Dir, contracts.ServiceLedger), "db", "ledger.sqlite")
	}

	note(o.Progress, "%s: %d repositories, %d PRs in %s", o.Workload, o.Repos, o.N, reposDir)
	prs, err := prepare(ctx, reposDir, o.Workload, o.N, o.Repos)
	if err != nil {
		return res, err
	}
	var reposBefore int64
	if o.Soak {
		reposBefore = dirBytes(reposDir)
	}
	if o.Preload > 0 {
		t0 := time.Now()
		if err := preload(ctx, ledgerDB, o.Preload, o.Progress); err != nil {
			return res, err
		}
		note(o.Progress, "preloaded %d finished sagas in %s", o.Preload, time.Since(t0).Round(time.Millisecond))
	}

	note(o.Progress, "starting the services (%s)", o.Mode)
	var sys system
	var alive func() error
	switch o.Mode {
	case ModeInproc:
		s, err := startInproc(ctx, cfg)
		if err != nil {
			return res, err
		}
		sys, alive = s, func() error { return nil }
	case ModeProcs:
		s, err := startProcs(ctx, cfg, o.Dir, o.Exe)
		if err != nil {
			return res, err
		}
		sys, alive = s, s.exited
	}
	var final []procUsage
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			final = sys.Stop()
		}
	}
	defer stop()

	hooks, err := setUpWatchers(ctx, sys, o.Watchers, o.Repos)
	if err != nil {
		return res, err
	}
	defer hooks.close()
	note(o.Progress, "posting CI statuses for %d PR heads", len(prs))
	if err := postStatuses(ctx, client.New(sys.URL(contracts.ServiceValidator), ""), prs); err != nil {
		return res, err
	}

	d := newDriver(sys.Client(), o.Workload, prs)
	stopWatch, err := d.watch(ctx)
	if err != nil {
		return res, err
	}
	stopProfile, err := startProfiles(o.CPUProfile, o.Trace)
	if err != nil {
		stopWatch()
		return res, err
	}
	var smp *sampler
	if o.Soak {
		smp = startSampler(ctx, o.Dir, metricsURLs(sys), o.SampleEvery, func() int64 { return d.merged.Load() + d.failed.Load() })
	}
	// The peak RSS of the timed part alone, as well as the whole run's:
	// the set-up (building the repositories) and the checks after it
	// (reading every saga back) are the benchmark's, not the services'.
	setup := sys.Usage()
	timedPeak := sys.ResetPeakRSS()
	before := sys.Usage()
	var mem *memSampler
	if o.Mode == ModeInproc {
		mem = startMemSampler(time.Second)
	}
	bar := startProgress(o.Progress, fmt.Sprintf("%s %s", o.Workload, o.Mode), o.N, d)
	runErr := d.run(ctx, o.Concurrency)
	bar.Stop()
	var samples []SoakSample
	if smp != nil {
		samples = smp.stop()
	}
	after := sys.Usage()
	if mem != nil {
		res.MemoryAtPeak = mem.Stop()
	}
	stopProfile()
	stopWatch()
	if err := writeHeapProfile(o.MemProfile); err != nil {
		return res, err
	}
	switch {
	case parent.Err() != nil:
		return res, fmt.Errorf("interrupted: %w", parent.Err())
	case errors.Is(runErr, context.DeadlineExceeded):
		res.TimedOut = true
		res.Problems = append(res.Problems, fmt.Sprintf("timed out after %s with %d of %d sagas finished", o.Timeout, d.merged.Load()+d.failed.Load(), o.N))
	case runErr != nil:
		return res, runErr
	}
	if err := alive(); err != nil {
		res.Problems = append(res.Problems, err.Error())
	}

	checkCtx, cancelCheck := checkContext(ctx, parent, res.TimedOut, o.N)
	defer cancelCheck()
	note(o.Progress, "checking the world")
	out := make([]outcome, len(prs))
	if err := readLedger(checkCtx, client.New(sys.URL(contracts.ServiceLedger), ""), d, out); err != nil {
		return res, fmt.Errorf("read the ledger: %w", err)
	}
	if o.Preload > 0 && !res.TimedOut {
		note(o.Progress, "timing the ledger's read paths over %d rows", o.Preload+o.N)
		qs, err := measureQueries(checkCtx, sys.URL(contracts.ServiceLedger), ledgerDB, o.Preload, o.QuerySamples, cfg.StepTimeout)
		if err != nil {
			return res, fmt.Errorf("preload queries: %w", err)
		}
		res.Queries = qs
	}
	if n, want := hooks.deliveries(), o.N*o.Watchers; n < want {
		res.Problems = append(res.Problems, fmt.Sprintf("webhooks: %d distinct deliveries received, want %d", n, want))
	}
	stop()
	if o.Soak {
		rep, err := soakReport(checkCtx, o, cfg, samples, reposDir, reposBefore)
		if err != nil {
			return res, err
		}
		res.Soak = rep
		if rep.Judged && !rep.Plateau {
			res.Problems = append(res.Problems, "soak: "+rep.Verdict())
		}
	}
	gitProblems, err := checkGit(reposDir, o.Workload, prs, o.Repos, out)
	if err != nil {
		return res, fmt.Errorf("check repositories: %w", err)
	}
	res.Problems = append(res.Problems, gitProblems...)
	summarise(&res, d, out, setup, before, after, final, timedPeak)
	return res, nil
}

// checkContext bounds the checks after the timed part. They get at least
// a grace period (checkGrace, or 5 ms per saga: reading 10,000 sagas back
// from a loaded machine takes tens of seconds) beyond a run that hit its
// timeout or ended just before it, so that the report still comes.
func checkContext(ctx, parent context.Context, timedOut bool, n int) (context.Context, context.CancelFunc) {
	grace := max(checkGrace, time.Duration(n)*5*time.Millisecond)
	if dl, ok := ctx.Deadline(); timedOut || (ok && time.Until(dl) < grace) {
		return context.WithTimeout(context.WithoutCancel(parent), grace)
	}
	return ctx, func() {}
}

// summarise fills in the figures and the line.
//
// setup is the usage before the timed part (its peak RSS that of the
// set-up), before and after that at its start and end (after's peak RSS
// that of the timed part when timedPeak, the peaks having been reset at
// its start), final that after the checks.
func summarise(res *Result, d *driver, out []outcome, setup, before, after, final []procUsage, timedPeak bool) {
	var failures []string
	for i, o := range out {
		if o.ok() {
			res.OK++
			continue
		}
		why := o.ledger
		if why == "" {
			why = o.git
		}
		failures = append(failures, d.prs[i].id+": "+why)
	}
	res.Bad = len(out) - res.OK
	if len(failures) > maxProblems {
		failures = append(failures[:maxProblems], fmt.Sprintf("… and %d more", len(failures)-maxProblems))
	}
	res.Problems = append(res.Problems, failures...)

	lat, steps, first, last := timings(d, out)
	q := quantiles("publish → MERGED", lat)
	res.P50Ms, res.P99Ms = q.P50Ms, q.P99Ms
	if len(lat) > 0 {
		res.ElapsedSeconds = last.Sub(first).Seconds()
		if res.ElapsedSeconds > 0 {
			res.SagasPerSecond = float64(res.OK) / res.ElapsedSeconds
		}
	}
	for k, name := range stepNames {
		res.Steps = append(res.Steps, quantiles(name, steps[k]))
	}
	res.Steps = append(res.Steps, q)
	var cpu time.Duration
	sys, sysKnown := SyscallCount{}, len(final) > 0
	var faults int64
	faultsKnown := len(final) > 0
	var allocs AllocCount
	allocsKnown := len(final) > 0
	for i := range final {
		u := ProcessUsage{Name: final[i].Name, PeakRSSBytes: final[i].PeakRSS}
		if i < len(setup) {
			u.PeakRSSBytes = max(u.PeakRSSBytes, setup[i].PeakRSS)
		}
		if timedPeak && i < len(after) {
			u.TimedPeakRSSBytes = after[i].PeakRSS
			res.TimedPeakRSSBytes += u.TimedPeakRSSBytes
		}
		if i < len(before) && i < len(after) {
			u.CPUSeconds = (after[i].CPU - before[i].CPU).Seconds()
			cpu += after[i].CPU - before[i].CPU
			u.Syscalls = syscallsBetween(before[i].Syscalls, after[i].Syscalls)
			if before[i].Faults >= 0 && after[i].Faults >= before[i].Faults {
				n := after[i].Faults - before[i].Faults
				u.PageFaults, u.PageFaultsPerSaga = &n, perOK(n, res.OK)
			}
			u.Allocs = after[i].Allocs.sub(before[i].Allocs)
			u.AllocsPerSaga = allocRate(u.Allocs, res.OK)
		}
		if u.Allocs != nil {
			allocs.add(*u.Allocs)
		} else {
			allocsKnown = false
		}
		if u.PageFaults != nil {
			faults += *u.PageFaults
		} else {
			faultsKnown = false
		}
		if u.Syscalls != nil {
			sys.Read += u.Syscalls.Read
			sys.Write += u.Syscalls.Write
			u.SyscallsPerSaga = perOK(u.Syscalls.Total(), res.OK)
		} else {
			sysKnown = false
		}
		res.PeakRSSBytes += u.PeakRSSBytes
		res.Processes = append(res.Processes, u)
	}
	res.CPUSeconds = cpu.Seconds()
	if res.OK > 0 {
		res.CPUMsPerSaga = res.CPUSeconds / float64(res.OK) * 1000
	}
	res.SyscallSource = syscallsUnavailable
	if sysKnown {
		res.Syscalls, res.SyscallsPerSaga, res.SyscallSource = &sys, perOK(sys.Total(), res.OK), SyscallSource
	}
	if faultsKnown {
		res.PageFaults, res.PageFaultsPerSaga = &faults, perOK(faults, res.OK)
	}
	if allocsKnown {
		res.Allocs, res.AllocsPerSaga = &allocs, allocRate(&allocs, res.OK)
	}
	res.Line = res.FormatLine()
}

// perOK is n per ok saga; nil without ok sagas.
func perOK(n int64, ok int) *float64 {
	if ok == 0 {
		return nil
	}
	v := float64(n) / float64(ok)
	return &v
}

// postStatuses records ci=success on every PR head through the
// validator's API, as a CI system would, before the timed part.
func postStatuses(ctx context.Context, c *client.Client, prs []pr) error {
	g := newGroup(ctx, 8)
	for _, p := range prs {
		g.Go(func(ctx context.Context) error {
			if err := c.PostStatus(ctx, p.repo, p.head, "ci", "success"); err != nil {
				return fmt.Errorf("post status of %s: %w", p.id, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// webhooks are the watchers' receivers: one loopback server counting
// distinct deliveries (X-Prsaga-Delivery).
type webhooks struct {
	srv  *http.Server
	mu   sync.Mutex
	seen map[string]bool
}

func setUpWatchers(ctx context.Context, sys system, perRepo, repos int) (*webhooks, error) {
	h := &webhooks{seen: map[string]bool{}}
	if perRepo == 0 {
		return h, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return h, err
	}
	h.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen[r.Header.Get("X-Prsaga-Delivery")] = true
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	c := client.New(sys.URL(contracts.ServiceNotifier), "")
	for k := 0; k < repos; k++ {
		var ws []map[string]string
		for j := 0; j < perRepo; j++ {
			ws = append(ws, map[string]string{"url": "http://" + ln.Addr().String() + "/hook/" + strconv.Itoa(j), "secret": "bench-secret-" + strconv.Itoa(j)})
		}
		if err := c.PutWatchers(ctx, repoName(k), ws); err != nil {
			h.close()
			return h, fmt.Errorf("set watchers of %s: %w", repoName(k), err)
		}
	}
	return h, nil
}

func (h *webhooks) deliveries() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (h *webhooks) close() {
	if h.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.srv.Shutdown(ctx)
		h.srv = nil
	}
}

// startProfiles starts a CPU profile into cpuPath and an execution trace
// into tracePath ("" = none of that kind).
func startProfiles(cpuPath, tracePath string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	start := func(path, what string, begin func(io.Writer) error, end func()) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := begin(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", what, err)
		}
		stops = append(stops, func() { end(); f.Close() })
		return nil
	}
	if err := start(cpuPath, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile); err != nil {
		return nil, err
	}
	if err := start(tracePath, "execution trace", trace.Start, trace.Stop); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// writeHeapProfile writes the heap profile (allocations since start, and
// in use) to path ("" = none).
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	return nil
}

// SortedProcesses lists processes biggest CPU first (for printing).
func (r Result) SortedProcesses() []ProcessUsage {
	ps := append([]ProcessUsage(nil), r.Processes...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].CPUSeconds > ps[j].CPUSeconds })
	return ps
}

// HeapFloor is the heap floor of a run's processes (config.HeapFloor): one
// process of every service in inproc mode; in procs mode one service per
// process, and the benchmark's own process hosts NATS, as `prsaga nats`.
func HeapFloor(cfg config.Config, mode string) uint64 {
	if mode == ModeProcs {
		return cfg.HeapFloor(1)
	}
	return cfg.HeapFloor(len(stack.AllServices))
}

// gcFloorText says which heap floor the run's processes keep (HeapFloor).
func gcFloorText(cfg config.Config, mode string, getenv func(string) string) string {
	if !gcfloor.Wanted(getenv) {
		return "off(GOGC/GOMEMLIMIT)"
	}
	f := HeapFloor(cfg, mode)
	if f == 0 {
		return "off"
	}
	t := strconv.FormatUint(f, 10) + "B"
	if f%(1<<20) == 0 {
		t = strconv.FormatUint(f>>20, 10) + "MiB"
	}
	if mode == ModeProcs {
		t += "/process"
	}
	return t
}
