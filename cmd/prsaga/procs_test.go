package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/freeport"
)

// The one harness of the tests that run prsaga as child processes: how a
// child is started, waited for and stopped. procGroup runs each child once
// (replicas, standby, reflock, forgery); chaosProc restarts one with the
// same arguments (chaos, faults). Both start through startLogged and wait
// through pollReady.

// buildBinary builds the prsaga command into a temp dir, for the tests
// that run it as separate processes.
func buildBinary(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "prsaga")
	cmd := exec.Command(goCommand(), "build", "-o", exe, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// goCommand is the go command that runs the tests.
func goCommand() string {
	if goBin, err := exec.LookPath("go"); err == nil {
		return goBin
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// startLogged starts argv (a command and its arguments) with env added to
// its PRSAGA_-free environment and its output appended to logPath, after
// header (if any). The kernel kills the child if the test process dies.
func startLogged(logPath, header string, env []string, argv ...string) (*exec.Cmd, error) {
	out, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own descriptor
	if header != "" {
		fmt.Fprint(out, header)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = cleanEnv(env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, cmd.Start()
}

// errExited is pollReady's answer when the process ended first.
var errExited = errors.New("exited")

// pollReady calls ready every 50ms until it succeeds, the process ends
// (done is closed: errExited) or ctx ends (its error).
func pollReady(ctx context.Context, ready func(context.Context) error, done <-chan struct{}) error {
	for {
		if ready(ctx) == nil {
			return nil
		}
		select {
		case <-done:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func httpReady(url string) func(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	}
}

func tcpReady(addr string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// logTail is the last n lines of a process's log, for a failure message.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no output: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeAddr is a loopback address for a child process to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// procGroup owns the test's child processes: each is started with its
// output in a log file, and stopAll stops (SIGTERM, then SIGKILL after a
// grace period) and waits for every one.
type procGroup struct {
	t    *testing.T
	logs string
	mu   sync.Mutex
	ps   []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	url  string
	done chan struct{}
	err  error
}

func (g *procGroup) start(bin, name string, args ...string) *proc {
	g.t.Helper()
	return g.startArgv(name, nil, append([]string{bin}, args...)...)
}

// startArgv starts argv (a command and its arguments) as process name,
// with env added to its PRSAGA_-free environment.
func (g *procGroup) startArgv(name string, env []string, argv ...string) *proc {
	g.t.Helper()
	p := &proc{name: name, log: filepath.Join(g.logs, name+".log"), done: make(chan struct{})}
	cmd, err := startLogged(p.log, "", env, argv...)
	if err != nil {
		g.t.Fatalf("start %s: %v", name, err)
	}
	p.cmd = cmd
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	g.mu.Lock()
	g.ps = append(g.ps, p)
	g.mu.Unlock()
	return p
}

func (g *procGroup) all() []*proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*proc(nil), g.ps...)
}

// waitFor waits until the process's output matches re and returns the
// first submatch.
func (g *procGroup) waitFor(ctx context.Context, p *proc, re *regexp.Regexp) string {
	g.t.Helper()
	for {
		b, _ := os.ReadFile(p.log)
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		select {
		case <-p.done:
			g.t.Fatalf("%s exited (%v): %s", p.name, p.err, logTail(p.log, 8))
		case <-ctx.Done():
			g.t.Fatalf("%s: no %s in its output: %s", p.name, re, logTail(p.log, 8))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady waits until the process answers /readyz.
func (g *procGroup) waitReady(ctx context.Context, p *proc) {
	g.t.Helper()
	switch err := pollReady(ctx, httpReady(p.url), p.done); {
	case errors.Is(err, errExited):
		g.t.Fatalf("%s exited at start (%v): %s", p.name, p.err, logTail(p.log, 8))
	case err != nil:
		g.t.Fatalf("%s not ready: %s", p.name, logTail(p.log, 8))
	}
}

// stopAll stops the services first, then the NATS server: SIGTERM, and
// SIGKILL for what still runs after 20s; it returns once every process
// has been waited for.
func (g *procGroup) stopAll() {
	ps := g.all()
	stop := func(ps []*proc) {
		for _, p := range ps {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		deadline := time.After(20 * time.Second)
		for _, p := range ps {
			select {
			case <-p.done:
			case <-deadline:
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
	var services, broker []*proc
	for _, p := range ps {
		if p.name == "nats" {
			broker = append(broker, p)
		} else {
			services = append(services, p)
		}
	}
	stop(services)
	stop(broker)
	for _, p := range ps {
		select {
		case <-p.done:
		default:
			g.t.Errorf("%s is still running", p.name)
		}
	}
}
