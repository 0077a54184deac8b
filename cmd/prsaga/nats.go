package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/datalock"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gcfloor"
	"github.com/prsaga/prsaga/platform/natsembed"
)

// cmdNATS runs only the embedded NATS server (JetStream) on
// PRSAGA_NATS_LISTEN, with prsaga's streams created, until interrupted:
// one broker for several `prsaga serve` processes on one host. A port of
// 0 picks a free one; the line "prsaga nats: listening on nats://…" says
// which.
func cmdNATS(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs, load := newFlags("nats", getenv, stderr)
	_, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return parseError(err, stderr)
	}
	if cfg.NATSURL != "" {
		fmt.Fprintln(stderr, "prsaga nats: PRSAGA_NATS_URL is set: there is a server already; unset it to run one here")
		return exitUsage
	}
	if cfg.StreamReplicas != 1 {
		fmt.Fprintf(stderr, "prsaga nats: PRSAGA_STREAM_REPLICAS=%d needs a NATS cluster; this is one server (use 1)\n", cfg.StreamReplicas)
		return exitUsage
	}
	gcfloor.Set(cfg.HeapFloor(0), os.Getenv)
	storeDir := filepath.Join(cfg.DataDir, "nats")
	holder := datalock.Me("prsaga nats", "nats "+cfg.NATSListen)
	lock, err := takeDataDir(cfg.DataDir, []datalock.Part{{Name: natsPart}}, holder)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga nats: %v\n", err)
		return exitFailed
	}
	defer lock.Release() // last: after the server has stopped
	ns, err := natsembed.Start(natsembed.Config{StoreDir: storeDir, Listen: cfg.NATSListen, Sync: cfg.Durability == "sync", Name: "prsaga-nats"})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga nats: %v\n", err)
		return exitFailed
	}
	defer ns.Stop()
	holder.Listens = []string{"nats " + ns.Addr()}
	_ = lock.Record(holder) // the port chosen, for a refused second process
	// Create the streams now, so that a forge may publish requests before
	// any service has started.
	b, err := bus.Connect(ctx, bus.Config{InProcess: ns.Server, Name: "prsaga-nats",
		Replicas: cfg.StreamReplicas, MaxAge: cfg.StreamMaxAge, Duplicates: cfg.DedupeWindow, AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver,
		DLQMaxAge: cfg.RetentionDLQ})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga nats: %v\n", err)
		return exitFailed
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = b.EnsureStreams(sctx)
	cancel()
	b.Close()
	if err != nil {
		fmt.Fprintf(stderr, "prsaga nats: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "prsaga nats: listening on %s (JetStream in %s)\n", ns.Addr(), storeDir)
	<-ctx.Done()
	fmt.Fprintln(stderr, "prsaga nats: shutting down")
	return exitOK
}
