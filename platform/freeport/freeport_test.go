package freeport_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/freeport"
)

// Every address is a loopback port free to listen on, none is handed out
// twice, and on Linux none is in the ephemeral range that outgoing
// connections take their ports from.
func TestLoopbackIsFreeDistinctAndNotEphemeral(t *testing.T) {
	start := 1 << 16
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if n, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil {
			start = n
		}
	}
	seen := map[string]bool{}
	for range 100 {
		addr, err := freeport.Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q: want 127.0.0.1:port (%v)", addr, err)
		}
		if p, _ := strconv.Atoi(port); p >= start || p == 0 {
			t.Errorf("port %d is in the ephemeral range (from %d)", p, start)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		ln.Close()
	}
}
