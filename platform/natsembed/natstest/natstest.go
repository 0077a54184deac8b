// Package natstest starts a real embedded nats-server with JetStream for
// tests, and the prsaga streams on it.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed"
)

// Start runs a server in t.TempDir() with an in-process connection and
// the PRSAGA streams; both are stopped by t.Cleanup. cfg may tune the bus
// (AckWait, MaxDeliver...); its URL and InProcess fields are set here.
func Start(t testing.TB, cfg bus.Config) (*natsembed.Server, *bus.Bus) {
	t.Helper()
	s, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(s.Stop)
	cfg.InProcess = s.Server
	cfg.Name = t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatalf("streams: %v", err)
	}
	return s, b
}
