package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prsaga/prsaga/services/indexer/rebuild"
)

// cmdReindex rebuilds the indexer's search index from the notified events
// of stream PRSAGA (design §6), in <data>/index (where `serve indexer`
// keeps it) or --index. It talks to NATS directly, as `dlq` does. The
// rebuilt index replaces the live one by a rename once complete; the live
// one is kept as <index>.old-<time> unless --remove-old. An indexer holding
// the index makes it refuse (exit 1): stop the indexer first, or build a
// copy elsewhere with --out, which leaves the live index alone.
func cmdReindex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga reindex [--index DIR | --out DIR] [--remove-old] [--allow-partial] [--lock-timeout D] [--quiet] [--json]"
	fs, load := newFlags("reindex", getenv, stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	index := fs.String("index", "", "the index to rebuild (default <data>/index, the indexer's)")
	out := fs.String("out", "", "build the index in this new directory instead, and swap nothing (safe while an indexer runs)")
	removeOld := fs.Bool("remove-old", false, "remove the replaced index instead of keeping it as <index>.old-<time>")
	allowPartial := fs.Bool("allow-partial", false, "rebuild even when the stream has lost its first events (aged out): the PRs notified only in them are dropped")
	lockTimeout := fs.Duration("lock-timeout", 5*time.Second, "wait at most this long for the index's lock")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	cfg, code, ok := parseVerb(fs, load, args, use, stderr, func(pos []string) bool {
		return len(pos) != 0 || *lockTimeout <= 0 || (*out != "" && (*index != "" || *removeOld))
	})
	if !ok {
		return code
	}
	if *index == "" {
		*index = filepath.Join(cfg.DataDir, "index")
	}
	url := cfg.NATSURL
	if url == "" {
		url = "nats://" + cfg.NATSListen
	}
	b, ok := dialBus(ctx, cfg, url, "reindex", "", stderr)
	if !ok {
		return exitFailed
	}
	defer b.Close()

	o := rebuild.Options{JS: b.JS, ReposDir: cfg.ReposDir, LockTimeout: *lockTimeout,
		AllowPartial: *allowPartial, RemoveOld: *removeOld}
	if *out != "" {
		o.Out = *out
	} else {
		o.Dir = *index
	}
	var p *reindexProgress
	if !*quiet {
		p = &reindexProgress{w: stderr, every: time.Second}
		o.Progress = p.update
	}
	sum, err := rebuild.Run(ctx, o)
	if p != nil {
		p.finish()
	}
	if err != nil {
		switch {
		case errors.Is(err, rebuild.ErrLocked):
			fmt.Fprintf(stderr, "prsaga reindex: %v\nprsaga reindex: an indexer holds %s: stop the indexer first (or build a copy with --out DIR)\n", err, *index)
		case errors.Is(err, rebuild.ErrPartial):
			fmt.Fprintf(stderr, "prsaga reindex: %v: PRs notified only before it would be dropped from the index; --allow-partial to rebuild anyway\n", err)
		case errors.Is(err, rebuild.ErrExists):
			fmt.Fprintf(stderr, "prsaga reindex: %v: --out must name a new directory\n", err)
			return exitUsage
		default:
			fmt.Fprintf(stderr, "prsaga reindex: %v (the live index is unchanged)\n", err)
		}
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, sum)
		return exitOK
	}
	printReindexSummary(stdout, sum)
	return exitOK
}

func printReindexSummary(w io.Writer, s rebuild.Summary) {
	fmt.Fprintf(w, "rebuilt %s from stream sequences %d..%d in %.1fs\n", s.Index, s.FirstSeq, s.LastSeq, s.Seconds)
	fmt.Fprintf(w, "  notified events read: %d\n  documents written:    %d\n  events skipped:       %d\n", s.Events, s.Documents, s.SkippedTotal())
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		fmt.Fprintf(w, "    %-18s %d\n", k, s.Skipped[k])
	}
	for _, e := range s.Examples {
		fmt.Fprintf(w, "    e.g. %s\n", e)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Warnings)) {
		fmt.Fprintf(w, "  warning %q: %d\n", k, s.Warnings[k])
	}
	if s.Unreadable != "" {
		fmt.Fprintf(w, "  the replaced index was unreadable: %s\n", s.Unreadable)
	}
	if s.Partial {
		fmt.Fprintf(w, "  partial: the stream begins at sequence %d; PRs notified only before it are not in the index\n", s.FirstSeq)
	}
	if s.Old != "" {
		fmt.Fprintf(w, "  the replaced index is kept in %s (remove it once satisfied)\n", s.Old)
	}
}

// reindexProgress writes a line "events read / total" at most every
// interval, and the last one when finished.
type reindexProgress struct {
	w     io.Writer
	every time.Duration

	mu            sync.Mutex
	last          time.Time
	read, pending uint64
}

func (p *reindexProgress) update(read, pending uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read, p.pending = read, pending
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		p.line()
	}
}

func (p *reindexProgress) line() {
	total := p.read + p.pending
	const width = 30
	fill := width
	if total > 0 {
		fill = int(uint64(width) * p.read / total)
	}
	fmt.Fprintf(p.w, "reindex [%s%s] %d/%d events\n", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.read, total)
}

func (p *reindexProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.read > 0 {
		p.line()
	}
}
