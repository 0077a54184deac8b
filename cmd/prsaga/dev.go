package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/datalock"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// cmdDev runs embedded NATS and all five services in one process until
// interrupted.
func cmdDev(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs, load := newFlags("dev", getenv, stderr)
	quiet := fs.Bool("quiet", false, "do not print log lines on stdout (they still go to <data>/logs)")
	_, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return parseError(err, stderr)
	}
	gcfloor.Set(cfg.HeapFloor(len(stack.AllServices)), os.Getenv)
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(cfg.DataDir, "logs")
	}
	if err := os.MkdirAll(cfg.ReposDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "prsaga dev: %v\n", err)
		return exitFailed
	}
	if !armFaults("dev", getenv, stderr) {
		return exitUsage
	}
	// dev opens every part of its data directory: no other process may.
	parts := serviceParts(stack.AllServices, false)
	holder := datalock.Me("prsaga dev", "http "+cfg.HTTPAddr)
	if cfg.NATSURL == "" {
		parts = append(parts, datalock.Part{Name: natsPart})
		holder.Listens = append(holder.Listens, "nats "+cfg.NATSListen)
	}
	lock, err := takeDataDir(cfg.DataDir, parts, holder)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dev: %v\n", err)
		return exitFailed
	}
	defer lock.Release() // last: after the stores are closed and dev.json is gone
	listens := [][2]string{{cfg.HTTPAddr, "--http / PRSAGA_HTTP_ADDR"}}
	if cfg.NATSURL == "" && cfg.NATSListen != "-" { // "-": in process only, no listener
		listens = append(listens, [2]string{cfg.NATSListen, "--nats-listen / PRSAGA_NATS_LISTEN"})
	}
	for _, l := range listens {
		if err := checkListen(l[0], l[1]); err != nil {
			fmt.Fprintf(stderr, "prsaga dev: %v\n", err)
			return exitFailed
		}
	}
	opts := stack.Options{Config: cfg}
	if !*quiet {
		opts.LogStdout = stdout
	}
	st, err := stack.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dev: %v\n", err)
		return exitFailed
	}
	defer st.Stop()
	warnUnknownFaults(st)
	natsURL := cfg.NATSURL
	if st.NATS != nil {
		natsURL = st.NATS.Addr()
	}
	holder.Listens = []string{"http " + st.URL}
	if natsURL != "" {
		holder.Listens = append(holder.Listens, "nats "+natsURL)
	}
	_ = lock.Record(holder) // the ports chosen, for a refused second process
	info := devInfo{APIURL: st.URL, NATSURL: natsURL, PID: os.Getpid()}
	if err := writeDevInfo(cfg.DataDir, info); err != nil {
		fmt.Fprintf(stderr, "prsaga dev: cannot record where it listens (client verbs need --api): %v\n", err)
	} else {
		defer removeDevInfo(cfg.DataDir, info)
	}
	fmt.Fprintf(stderr, "prsaga dev: dashboard %s/   NATS %s   data %s   repos %s   logs %s\n",
		st.URL, st.NATS.Addr(), cfg.DataDir, cfg.ReposDir, cfg.LogDir)
	<-ctx.Done()
	fmt.Fprintln(stderr, "prsaga dev: shutting down")
	return exitOK
}

// cmdServe runs one service against PRSAGA_NATS_URL and its own store.
func cmdServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs, load := newFlags("serve", getenv, stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseError(err, stderr)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "prsaga serve: name one service: validator, merger, notifier, indexer or ledger")
		return exitUsage
	}
	names, err := stack.ParseServices(pos[0])
	if err != nil {
		return parseError(err, stderr)
	}
	cfg, err := load()
	if err != nil {
		return parseError(err, stderr)
	}
	gcfloor.Set(cfg.HeapFloor(len(names)), os.Getenv)
	if cfg.NATSURL == "" {
		fmt.Fprintln(stderr, "prsaga serve: PRSAGA_NATS_URL is required (use `prsaga dev` for an embedded server)")
		return exitUsage
	}
	if !armFaults("serve", getenv, stderr) {
		return exitUsage
	}
	listen := cfg.HTTPListen(names)
	holder := datalock.Me("prsaga serve "+pos[0], "http "+listen.Addr)
	lock, err := takeDataDir(cfg.DataDir, serviceParts(names, true), holder)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga serve %s: %v\n", pos[0], err)
		return exitFailed
	}
	defer lock.Release() // last: after the stores are closed
	st, err := stack.Start(ctx, stack.Options{Config: cfg, Services: names, LogStdout: stdout})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga serve %s: %v\n", pos[0], err)
		return exitFailed
	}
	defer st.Stop()
	holder.Listens = []string{"http " + st.URL}
	_ = lock.Record(holder) // the port chosen, for a refused second process
	warnUnknownFaults(st)
	warnDurability(st.Log, cfg, listen)
	st.Log.Info("serving", "services", names, "http", st.URL)
	<-ctx.Done()
	return exitOK
}

// warnDurability warns that a process reachable from the network runs
// with PRSAGA_DURABILITY=process: what it acknowledged may be lost with the
// machine's power.
func warnDurability(log *slog.Logger, cfg config.Config, listen config.Listener) {
	if cfg.Durability != "process" || config.IsLoopback(listen.Addr) {
		return
	}
	log.Warn(durabilityWarning, "durability", cfg.Durability, "listen", listen.Addr, "setting", listen.Env)
}

const durabilityWarning = "PRSAGA_DURABILITY=process on a listener off loopback: work already acknowledged " +
	"(store commits, the merger's git objects and refs) is not fsynced and may be lost on a power loss or OS crash; " +
	"set PRSAGA_DURABILITY=sync (--durability sync) in production"

// armFaults arms the fault points PRSAGA_FAULTS names (crash tests only;
// docs/operating.md lists the points), once, before anything starts.
func armFaults(cmd string, getenv func(string) string, stderr io.Writer) bool {
	rules, err := fault.Setup(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga %s: %v\n", cmd, err)
		return false
	}
	if len(rules) > 0 {
		fmt.Fprintf(stderr, "prsaga %s: fault points armed (%s): %v\n", cmd, fault.Env, rules)
	}
	return true
}

// warnUnknownFaults names armed points that nothing in this process hits:
// a typo, or a point of a service not running here.
func warnUnknownFaults(st *stack.Stack) {
	if u := fault.Unknown(); len(u) > 0 {
		st.Log.Warn("armed fault points not in this process", "points", u, "known", fault.Points())
	}
}
