package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/freeport"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/natsembed"
)

// A service started before its NATS server connects anyway, waits for
// JetStream (logging it), and creates its streams once the server is up.
func TestAwaitWaitsForALateServer(t *testing.T) {
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if _, err := bus.Connect(ctx, bus.Config{URL: "nats://" + addr}); err == nil {
		t.Fatal("Connect without WaitForServer succeeded with no server")
	}
	b, err := bus.Connect(ctx, bus.Config{URL: "nats://" + addr, WaitForServer: true})
	if err != nil {
		t.Fatalf("Connect with WaitForServer: %v", err)
	}
	defer b.Close()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	done := make(chan error, 1)
	go func() { done <- b.Await(ctx, log, "streams", b.EnsureStreams) }()

	for !strings.Contains(logs.String(), "JetStream not available; waiting") {
		select {
		case err := <-done:
			t.Fatalf("Await returned %v with no server", err)
		case <-ctx.Done():
			t.Fatal("no 'waiting' log line")
		case <-time.After(20 * time.Millisecond):
		}
	}
	ns, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Await: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("Await did not return once the server was up: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "JetStream available") {
		t.Errorf("no 'available' log line: %s", logs.String())
	}
	if _, err := b.JS.Stream(ctx, "PRSAGA"); err != nil {
		t.Errorf("stream not created: %v", err)
	}
}

// A request JetStream refuses for what it is (not for being unreachable)
// is not retried.
func TestAwaitDoesNotRetryARealError(t *testing.T) {
	ns, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: ns.ClientURL(), WaitForServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tries := 0
	err = b.Await(ctx, nil, "a bad consumer", func(ctx context.Context) error {
		tries++
		_, err := b.Consumer(ctx, bus.ConsumerSpec{Durable: "bad.name", Subjects: []string{"prsaga.>"}})
		return err
	})
	if err == nil || tries != 1 {
		t.Errorf("Await: %v after %d tries, want the error after one", err, tries)
	}
}
