//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds the prsaga command once into a temp dir (the chaos
// test runs it as separate processes).
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	exe := filepath.Join(t.TempDir(), "prsaga")
	cmd := exec.Command(goBin, "build", "-o", exe, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

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
	out, err := os.OpenFile(p.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child holds its own descriptor
	fmt.Fprintf(out, "\n=== chaos: start %d of %s\n", p.starts+1, p.name)
	cmd := exec.Command(p.exe, p.args...)
	cmd.Env = cleanEnv(p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	// The kernel kills the child if the test process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.killed = cmd, done, false
	p.starts++
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		if !p.killed && p.cmd == cmd {
			p.crashes = append(p.crashes, fmt.Sprintf("%v: %s", err, chaosTail(p.log, 8)))
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
	for {
		if err := p.ready(ctx); err == nil {
			return nil
		}
		if !p.running() {
			return fmt.Errorf("%s exited at start: %s", p.name, chaosTail(p.log, 8))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %s", p.name, chaosTail(p.log, 8))
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

// tail is the last n lines of a file, for a failure message.
func chaosTail(path string, n int) string {
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
