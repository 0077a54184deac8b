package natsembed_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/platform/natsembed"
)

func TestStartRequiresStoreDir(t *testing.T) {
	if s, err := natsembed.Start(natsembed.Config{}); err == nil {
		s.Stop()
		t.Fatal("start without StoreDir: got nil error")
	}
}

func TestStartRejectsBadListen(t *testing.T) {
	for _, listen := range []string{"nonsense", "127.0.0.1:http"} {
		if s, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Listen: listen}); err == nil {
			s.Stop()
			t.Errorf("start with Listen %q: got nil error", listen)
		}
	}
}

func TestInProcessOnly(t *testing.T) {
	s, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if a := s.Addr(); a != "" {
		t.Errorf("Addr without a listener: got %q, want empty", a)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.InProcessServer(s.Server))
	if err != nil {
		t.Fatalf("in-process connect: %v", err)
	}
	defer nc.Close()
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Errorf("flush: %v", err)
	}
}

func TestListenOnRandomPort(t *testing.T) {
	s, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	addr := s.Addr()
	if addr == "" || strings.HasSuffix(addr, ":4222") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr: got %q, want a random port", addr)
	}
	nc, err := nats.Connect(addr, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("TCP connect to %s: %v", addr, err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(); err != nil {
		t.Errorf("JetStream not enabled: %v", err)
	}
}
