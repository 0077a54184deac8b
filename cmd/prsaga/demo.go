package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/runner"
)

// demoConfig makes the demo fast: a short delivery budget (ack wait 1s ×
// 2 deliveries + backoff 0.6s = 2.6s), step timeouts just above it (the
// notifier's also covers its own webhook attempts), a quick watchdog. The
// result passes the same validation as any configuration.
func demoConfig(cfg config.Config, dir string) (config.Config, error) {
	cfg.DataDir = dir
	cfg.ReposDir = filepath.Join(dir, "repos")
	cfg.Store = "sqlite://" + filepath.Join(dir, "db")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.NATSURL = ""
	cfg.APIToken, cfg.StatusToken, cfg.ReadToken = "", "", ""
	cfg.WebhookAllowPrivate = true // the demo's webhook receivers are on loopback
	cfg.AckWait, cfg.MaxDeliver = time.Second, 2
	cfg.Backoff = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}
	cfg.StepTimeouts = map[contracts.State]time.Duration{
		contracts.StateValidating: 5 * time.Second,
		contracts.StateMerging:    5 * time.Second,
		contracts.StateNotifying:  40 * time.Second,
		contracts.StateIndexing:   3 * time.Second,
	}
	cfg.WatchdogInterval, cfg.WatchdogBatch = 250*time.Millisecond, 100
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, stack.LedgerWatchdog(cfg).Validate()
}

// killedPR is the demo PR whose index step is killed on its first attempt.
const killedPR = "acme/tools#5"

// killIndexer is the indexer's fault hook in the demo: every delivery of
// the first attempt of killedPR's notified event dies after the side
// effect, as if the process crashed each time, until JetStream stops
// redelivering. Nothing reports the failure: only the watchdog can.
func killIndexer(point string, env contracts.Envelope) error {
	if point == runner.FaultAfterEffect && env.Event.Type() == contracts.TypeNotified &&
		env.Event.Subject() == killedPR && env.Meta.Attempt == 1 {
		return errors.New("demo: the indexer was killed while indexing")
	}
	return nil
}

// cmdDemo runs every scenario of design §7 against a fresh stack in a temp
// dir; exit 0 only if each ends as expected.
func cmdDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs, load := newFlags("demo", getenv, stderr)
	keep := fs.Bool("keep", false, "keep the temp dir (logs, databases, repositories)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on a scenario after this long")
	stay := fs.Bool("stay", false, "keep the stack and its dashboard up after the scenarios, until interrupted (Ctrl-C)")
	_, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return parseError(err, stderr)
	}
	dir, err := os.MkdirTemp("", "prsaga-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	if *keep {
		fmt.Fprintf(stdout, "data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if cfg, err = demoConfig(cfg, dir); err != nil {
		fmt.Fprintf(stderr, "prsaga demo: config: %v\n", err)
		return exitFailed
	}
	st, err := startDemoStacks(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	defer st.stop()
	c := client.New(st.main.URL, "")

	good, err := startHook(func() bool { return true })
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	defer good.Close()
	var up atomic.Bool // the tools watcher starts down
	flaky, err := startHook(up.Load)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	defer flaky.Close()

	scenarios, err := prepareDemo(cfg.ReposDir, func() { up.Store(true) })
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: prepare repositories: %v\n", err)
		return exitFailed
	}
	for repo, h := range map[string]*hook{"acme/widgets": good, "acme/tools": flaky} {
		if err := c.PutWatchers(ctx, repo, []map[string]string{{"url": h.url, "secret": "demo-secret"}}); err != nil {
			fmt.Fprintf(stderr, "prsaga demo: register watcher: %v\n", err)
			return exitFailed
		}
	}
	up2 := "up until the demo ends; `prsaga demo --stay` keeps it up afterwards"
	if *stay {
		up2 = "stays up after the scenarios until Ctrl-C"
	}
	fmt.Fprintf(stdout, "prsaga demo: %d scenarios, dashboard %s/ (%s; step timeouts %v, watchdog every %s)\n\n",
		len(scenarios), st.main.URL, up2, cfg.StepTimeouts, cfg.WatchdogInterval)
	failed := 0
	for _, sc := range scenarios {
		if !runScenario(ctx, c, sc, *timeout, stdout) {
			failed++
		}
	}
	fmt.Fprintf(stdout, "webhook deliveries received: %d (widgets), %d (tools; %d refused while down)\n",
		good.ok.Load(), flaky.ok.Load(), flaky.refused.Load())
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d of %d scenarios did NOT end as expected (logs: rerun with --keep)\n", failed, len(scenarios))
		return exitFailed
	}
	fmt.Fprintf(stdout, "\nall %d scenarios ended as expected\n", len(scenarios))
	if *stay {
		fmt.Fprintf(stdout, "dashboard: %s/ — up until Ctrl-C\n", st.main.URL)
		<-ctx.Done()
	} else {
		fmt.Fprintln(stdout, "(the dashboard stopped with the demo: `make demo-stay` or `prsaga demo --stay` keeps it up)")
	}
	return exitOK
}

// demoStacks are the demo's two stacks on one NATS server: everything but
// the indexer, and the indexer with its fault hook (a hook sees every
// consumer of its stack; alone, it can only kill the indexer).
type demoStacks struct {
	main, indexer *stack.Stack
}

func startDemoStacks(ctx context.Context, cfg config.Config) (*demoStacks, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	main, err := stack.Start(ctx, stack.Options{Config: cfg, HTTPListener: ln, NATSListen: "127.0.0.1:0",
		Services: []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceLedger}})
	if err != nil {
		return nil, err
	}
	icfg := cfg
	icfg.NATSURL = main.NATS.Addr()
	ix, err := stack.Start(ctx, stack.Options{Config: icfg, Services: []string{contracts.ServiceIndexer}, NoHTTP: true, Fault: killIndexer})
	if err != nil {
		main.Stop()
		return nil, fmt.Errorf("indexer: %w", err)
	}
	return &demoStacks{main: main, indexer: ix}, nil
}

func (d *demoStacks) stop() {
	d.indexer.Stop()
	d.main.Stop()
}

// hook is a webhook receiver that answers 503 while up() is false.
type hook struct {
	url         string
	srv         *http.Server
	ok, refused atomic.Int64
}

func startHook(up func() bool) (*hook, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hook{url: "http://" + ln.Addr().String() + "/hook"}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up() {
			h.refused.Add(1)
			http.Error(w, "receiver down", http.StatusServiceUnavailable)
			return
		}
		h.ok.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 5 * time.Second}
	go h.srv.Serve(ln)
	return h, nil
}

func (h *hook) Close() { h.srv.Close() }
