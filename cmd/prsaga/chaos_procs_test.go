//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
)

// chaosProc is one child process that the chaos test kills and restarts: the
// same arguments, the same ports and data dir each time, its output
// appended to one log file.
type chaosProc struct {
	name, exe string
	args      []string
	log       string
	ready     func(ctx context.Context) error // nil: started is ready
	env       []string                        // KEY=value added to the next starts' environment

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	killed  bool // by us: an exit we did not cause is a finding
	starts  int
	crashes []string // exits we did not cause, with the log's tail
}

func (p *chaosProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	header := fmt.Sprintf("\n=== chaos: start %d of %s\n", p.starts+1, p.name)
	cmd, err := startLogged(p.log, header, p.env, append([]string{p.exe}, p.args...)...)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.killed = cmd, done, false
	p.starts++
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		if !p.killed && p.cmd == cmd {
			p.crashes = append(p.crashes, fmt.Sprintf("%v: %s", err, logTail(p.log, 8)))
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *chaosProc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// running reports whether the process is alive.
func (p *chaosProc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (p *chaosProc) waitReady(ctx context.Context) error {
	if p.ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil { // never started
		return fmt.Errorf("%s exited at start: %s", p.name, logTail(p.log, 8))
	}
	switch err := pollReady(ctx, p.ready, done); {
	case errors.Is(err, errExited):
		return fmt.Errorf("%s exited at start: %s", p.name, logTail(p.log, 8))
	case err != nil:
		return fmt.Errorf("%s not ready: %s", p.name, logTail(p.log, 8))
	}
	return nil
}

// serviceArgs are `prsaga serve <name>`'s arguments: every setting as a
// flag (the child gets none of this process's PRSAGA_* variables).
func serviceArgs(name, natsURL, dataDir, reposDir, httpAddr string, extra ...string) []string {
	args := []string{"serve", name,
		"--nats-url", natsURL,
		"--data", dataDir,
		"--store", "sqlite://" + filepath.Join(dataDir, "db"),
		"--repos", reposDir,
		"--http", httpAddr,
		"--log-dir", filepath.Join(dataDir, "logs"),
		"--" + name + "-http", "",
		"--api-token", "", "--status-token", "",
		"--webhook-allow-private", "true",
	}
	return append(args, extra...)
}

// chaosProcs are the processes of TestChaos and TestFaultPoints: `prsaga
// nats` and the five services, each its own process on a free port.
type chaosProcs struct {
	nats     *chaosProc
	natsURL  string
	services map[string]*chaosProc
	names    []string          // the services, in start order
	all      []*chaosProc      // nats first, then the services in order
	addrs    map[string]string // service -> HTTP address
}

// newChaosProcs prepares the processes (it starts none) with their data
// and logs in dir; every service gets serviceArgs and tuning. All are
// killed when the test ends, the services first.
func newChaosProcs(t *testing.T, exe, dir, reposDir string, tuning ...string) chaosProcs {
	natsAddr := freeAddr(t)
	c := chaosProcs{natsURL: "nats://" + natsAddr, services: map[string]*chaosProc{}, addrs: map[string]string{}}
	c.nats = &chaosProc{name: "nats", exe: exe, log: filepath.Join(dir, "nats.log"), ready: tcpReady(natsAddr),
		args: []string{"nats", "--nats-listen", natsAddr, "--data", filepath.Join(dir, "nats")}}
	c.all = []*chaosProc{c.nats}
	for _, name := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		addr := freeAddr(t)
		c.addrs[name] = addr
		p := &chaosProc{name: name, exe: exe, log: filepath.Join(dir, name+".log"), ready: httpReady("http://" + addr),
			args: serviceArgs(name, c.natsURL, filepath.Join(dir, name), reposDir, addr, tuning...)}
		c.services[name], c.names, c.all = p, append(c.names, name), append(c.all, p)
	}
	t.Cleanup(func() {
		for i := len(c.all) - 1; i >= 0; i-- { // services first, then NATS
			c.all[i].kill()
		}
	})
	return c
}

// api is a client of service name's HTTP API.
func (c chaosProcs) api(name string) *client.Client { return client.New("http://"+c.addrs[name], "") }

// startAll starts ps, failing the test on an error.
func startAll(t *testing.T, ps ...*chaosProc) {
	t.Helper()
	for _, p := range ps {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
	}
}

// readyAll waits until every one of ps is ready, failing the test on the
// first that is not (or has exited).
func readyAll(ctx context.Context, t *testing.T, ps ...*chaosProc) {
	t.Helper()
	for _, p := range ps {
		if err := p.waitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// upAll starts those of ps that are not running, then waits until every
// one is ready.
func upAll(ctx context.Context, t *testing.T, ps ...*chaosProc) {
	t.Helper()
	for _, p := range ps {
		if !p.running() {
			startAll(t, p)
		}
	}
	readyAll(ctx, t, ps...)
}
