package stack

import (
	"context"
	"flag"
	"net"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/config"
)

// startTestStack starts every service in this process on a fresh data
// directory, with embedded NATS and an HTTP listener on a free port; it
// stops at the end of the test.
func startTestStack(t *testing.T) *Stack {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	load := config.Bind(fs, func(string) string { return "" })
	if err := fs.Parse([]string{"--data", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := Start(ctx, Options{Config: cfg, HTTPListener: ln, NATSListen: "-"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}
