package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/backup"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/datalock"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/natsembed"
)

// cmdRestore puts a backup of `prsaga backup` back into a stopped
// deployment (design §7): the databases and the search index, then every
// durable consumer reset to resume from the position the backup recorded,
// so that the events after it are delivered again — the inboxes drop what
// the backup had applied, the rest is handled anew. It refuses while
// services run (--force overrides, with a warning) and when the backup is
// older than the stream or the inboxes keep. Interrupted, it is run again
// (backup.Restore says why that is safe); PRSAGA_FAULTS arms its fault
// points (backup.FaultDBMoved …) for the tests that kill it.
func cmdRestore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga restore --from DIR [--force] [--timeout D] [--json]"
	fs, load := newFlags("restore", getenv, stderr)
	from := fs.String("from", "", "the backup directory, as `prsaga backup --to` wrote it (required)")
	force := fs.Bool("force", false, "restore although services seem to run, or the backup is older than the stream or the inboxes keep (warns)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long (exit 1; run it again)")
	asJSON := fs.Bool("json", false, "print what was done as JSON")
	cfg, dbDir, code, ok := parseSQLiteVerb(fs, load, args, use, stderr, func(pos []string) bool {
		return len(pos) != 0 || *from == "" || *timeout <= 0
	})
	if !ok {
		return code
	}
	if _, err := fault.Setup(getenv); err != nil {
		fmt.Fprintf(stderr, "prsaga restore: %v\n", err)
		return exitUsage
	}
	if _, err := backup.ReadManifest(*from); err != nil {
		fmt.Fprintf(stderr, "prsaga restore: %v\n", err)
		return exitFailed
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	indexDir := filepath.Join(cfg.DataDir, "index")
	running := backup.InUse(dbDir, indexDir)
	holders, err := datalock.Holders(cfg.DataDir)
	if err != nil {
		running = append(running, fmt.Sprintf("%s: cannot tell whether a process owns it: %v", cfg.DataDir, err))
	}
	for _, h := range holders {
		running = append(running, "data directory "+cfg.DataDir+": "+h)
	}
	b, stopNATS, err := restoreBus(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga restore: %v\n", err)
		return exitFailed
	}
	defer stopNATS()
	pulling, err := pullingConsumers(ctx, b)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga restore: %v\n", err)
		return exitFailed
	}
	running = append(running, pulling...)
	if len(running) > 0 {
		if !*force {
			fmt.Fprintln(stderr, "prsaga restore: the services must be stopped first:")
			for _, r := range running {
				fmt.Fprintf(stderr, "  %s\n", r)
			}
			fmt.Fprintln(stderr, "stop them (a stopped service's pulls expire within 5s), or --force")
			return exitFailed
		}
		for _, r := range running {
			fmt.Fprintf(stderr, "prsaga restore: warning: %s (restoring anyway: --force; a service still running keeps the files it has open, now moved aside: restart it)\n", r)
		}
	}
	res, err := backup.Restore(ctx, backup.RestoreOptions{
		From: *from, DBDir: dbDir, IndexDir: indexDir, JS: b.JS,
		RetentionInbox: cfg.RetentionInbox, Force: *force, Warn: prefixWriter{w: stderr, prefix: "prsaga restore: "},
	})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga restore: %v\n", err)
		if errors.Is(err, backup.ErrTooOld) {
			fmt.Fprintln(stderr, "prsaga restore: nothing was changed; --force restores it anyway (events the stream no longer holds are lost, and a redelivery whose inbox entry was pruned is applied again)")
		}
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, res)
		return exitOK
	}
	fmt.Fprintf(stdout, "restored the backup of %s from %s\n", res.Manifest.CreatedAt.Format(time.RFC3339), *from)
	for _, d := range res.Manifest.Databases {
		fmt.Fprintf(stdout, "  database %s\n", d.Service)
	}
	if res.Manifest.Index != nil {
		fmt.Fprintln(stdout, "  search index")
	}
	if res.CarriedOver > 0 {
		fmt.Fprintf(stdout, "  kept %d rows of the merger's journal written since the backup, from every replaced merger database (the merges they record are in git)\n", res.CarriedOver)
	}
	for _, n := range slices.Sorted(maps.Keys(res.Reset)) {
		fmt.Fprintf(stdout, "  consumer %-15s resumes from sequence %d\n", n, res.Reset[n])
	}
	fmt.Fprintf(stdout, "the replaced databases are kept in %s", res.Kept)
	if res.KeptIndex != "" {
		fmt.Fprintf(stdout, ", the replaced index in %s", res.KeptIndex)
	}
	fmt.Fprintln(stdout, "; start the services")
	return exitOK
}

// restoreBus connects to the deployment's NATS: PRSAGA_NATS_URL, or else
// the embedded server's store in <data>/nats, started here without a
// listener once its lock is taken — even --force does not open a store
// another server has open: two servers on one store corrupt it.
func restoreBus(ctx context.Context, cfg config.Config) (*bus.Bus, func(), error) {
	bc := clientBus(cfg, cfg.NATSURL, "restore")
	var ns *natsembed.Server
	var lock *datalock.Lock
	stop := func() {
		if ns != nil {
			ns.Stop()
		}
		lock.Release()
	}
	if cfg.NATSURL == "" {
		store := filepath.Join(cfg.DataDir, "nats")
		if _, err := os.Stat(store); err != nil {
			return nil, nil, fmt.Errorf("no PRSAGA_NATS_URL and no embedded NATS store in %s: %w", store, err)
		}
		var err error
		if lock, err = takeDataDir(cfg.DataDir, []datalock.Part{{Name: natsPart}}, datalock.Me("prsaga restore")); err != nil {
			return nil, nil, err
		}
		if ns, err = natsembed.Start(natsembed.Config{StoreDir: store, Name: "prsaga-restore", Sync: true}); err != nil {
			stop()
			return nil, nil, err
		}
		bc.InProcess = ns.Server
	}
	b, err := bus.Connect(ctx, bc)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return b, func() {
		b.Close()
		stop()
	}, nil
}

// pullingConsumers names the durable consumers someone is pulling from:
// a service that runs, wherever it runs.
func pullingConsumers(ctx context.Context, b *bus.Bus) ([]string, error) {
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	var out []string
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable != "" && ci.NumWaiting > 0 {
			out = append(out, fmt.Sprintf("consumer %s has %d pulls waiting: its service runs", ci.Name, ci.NumWaiting))
		}
	}
	return out, lister.Err()
}

// prefixWriter starts every write with prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
