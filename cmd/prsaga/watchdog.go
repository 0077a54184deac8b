package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
)

// cmdWatchdog runs one tick of the ledger's watchdog against the
// configured store and bus and prints what it did as JSON: for services
// that run on a schedule (cron, a timer-triggered function) rather than
// all the time. Beside a running ledger and other schedulers it is as safe
// as their own ticks: a stuck saga is failed once (design §4).
func cmdWatchdog(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga watchdog --once [--timeout D]  (the ledger runs the watchdog itself; --once runs one tick and exits)"
	fs, load := newFlags("watchdog", getenv, stderr)
	once := fs.Bool("once", false, "run one tick, print a JSON summary (rows examined, timed out, each with its diagnosis) and exit")
	timeout := fs.Duration("timeout", time.Minute, "give up on the tick after this long (exit 1)")
	cfg, code, ok := parseVerb(fs, load, args, use, stderr, func(pos []string) bool {
		return !*once || len(pos) != 0 || *timeout <= 0
	})
	if !ok {
		return code
	}
	cfg.NATSURL = natsURLOf(fs, getenv, cfg)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", "watchdog")
	srv, s, err := stack.Ledger(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga watchdog: %v\n", err)
		refusedHint(stderr, err, "--nats-url / PRSAGA_NATS_URL (or --data to the directory `prsaga dev` runs in)")
		return exitFailed
	}
	defer s.Stop()
	res, err := srv.WatchdogOnce(ctx, s.Bus)
	out, merr := json.MarshalIndent(res, "", "  ")
	if merr != nil {
		fmt.Fprintf(stderr, "prsaga watchdog: %v\n", merr)
		return exitFailed
	}
	fmt.Fprintln(stdout, string(out))
	if err != nil {
		fmt.Fprintf(stderr, "prsaga watchdog: %v\n", err)
		return exitFailed
	}
	return exitOK
}
