// Package freeport hands out loopback addresses for a process to listen
// on later: a test or the benchmark starts a child on a port it chose.
//
// A port the kernel picked for a listener on :0 comes from the ephemeral
// range, the same range every outgoing connection takes its local port
// from, so between the pick and the child's bind any connection may take
// it ("bind: address already in use"). Where the range is known (Linux),
// ports are chosen below it instead, where only explicit binds go.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the first port considered below the ephemeral range; lower
// ones are more often taken by the machine's own services.
const lowest = 10000

var (
	mu    sync.Mutex
	given = map[int]bool{} // ports this process handed out: never twice
)

// Loopback returns "127.0.0.1:port" for a port nothing listens on now,
// outside the ephemeral range where that range is known.
func Loopback() (string, error) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		return kernelPick()
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if given[p] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // taken: another process listens there
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", err
		}
		given[p] = true
		return addr, nil
	}
	return "", fmt.Errorf("freeport: no free port in %d-%d", lo, hi-1)
}

// kernelPick lets the kernel choose the port (from its ephemeral range),
// for systems whose range is unknown.
func kernelPick() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// belowEphemeral is [lo, hi): the ports from lowest up to the start of
// Linux's ephemeral range, when that leaves at least a thousand.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start-lowest < 1000 {
		return 0, 0, false
	}
	return lowest, start, true
}
