package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/freeport"
	"github.com/prsaga/prsaga/platform/natsembed"
)

// procs runs an embedded NATS server listening on a loopback port in this
// process and each service as its own `prsaga serve <service>` child with
// its own data dir — the deployment shape, on one machine.
type procs struct {
	ns       *natsembed.Server
	b        *bus.Bus
	children []*child
}

// child is one service process.
type child struct {
	name string
	cmd  *exec.Cmd
	url  string
	log  string // its stdout and stderr
	done chan struct{}
	err  error // of Wait, once done is closed
}

// serviceDir is the data dir of a service's child process.
func serviceDir(dir, service string) string { return filepath.Join(dir, service) }

func startProcs(ctx context.Context, cfg config.Config, dir, exe string) (_ *procs, err error) {
	p := &procs{}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	p.ns, err = natsembed.Start(natsembed.Config{
		StoreDir: filepath.Join(dir, "nats"),
		Listen:   "127.0.0.1:0",
		Sync:     cfg.Durability == "sync",
		Name:     "prsaga-bench",
	})
	if err != nil {
		return p, err
	}
	cfg.NATSURL = p.ns.Addr()
	if p.b, err = bus.Connect(ctx, busConfig(cfg, "prsaga-bench")); err != nil {
		return p, err
	}
	if err = p.b.EnsureStreams(ctx); err != nil {
		return p, err
	}
	if err = os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return p, err
	}
	for _, name := range stack.AllServices {
		c, err := spawn(cfg, dir, exe, name)
		if err != nil {
			return p, err
		}
		p.children = append(p.children, c)
	}
	for _, c := range p.children {
		if err := c.ready(ctx); err != nil {
			return p, err
		}
	}
	return p, nil
}

// spawn starts `exe serve <name>` with every setting as a flag, and none
// of this process's PRSAGA_* variables (a PRSAGA_<SERVICE>_HTTP_ADDR would
// move its listener).
func spawn(cfg config.Config, dir, exe, name string) (*child, error) {
	addr, err := freeport.Loopback()
	if err != nil {
		return nil, err
	}
	data := serviceDir(dir, name)
	args := []string{"serve", name,
		"--nats-url", cfg.NATSURL,
		"--data", data,
		"--store", "sqlite://" + filepath.Join(data, "db"),
		"--repos", cfg.ReposDir,
		"--http", addr,
		"--" + name + "-http", "",
		"--api-token", "", "--status-token", "", "--read-token", "",
		"--log-level", cfg.LogLevel,
		"--log-dir", "",
		"--durability", cfg.Durability,
		"--ack-wait", cfg.AckWait.String(),
		"--max-deliver", strconv.Itoa(cfg.MaxDeliver),
		"--backoff", joinDurations(cfg.Backoff),
		"--stream-max-age", cfg.StreamMaxAge.String(),
		"--dedupe-window", cfg.DedupeWindow.String(),
		"--step-timeout", cfg.StepTimeout.String(),
		"--watchdog-interval", cfg.WatchdogInterval.String(),
		"--watchdog-batch", strconv.Itoa(cfg.WatchdogBatch),
		"--webhook-allow-private", strconv.FormatBool(cfg.WebhookAllowPrivate),
	}
	if cfg.GCHeapFloor >= 0 {
		args = append(args, "--gc-heap-floor", strconv.FormatInt(cfg.GCHeapFloor, 10))
	}
	for state, d := range cfg.StepTimeouts {
		args = append(args, "--step-timeout-"+strings.ToLower(string(state)), d.String())
	}
	logPath := filepath.Join(dir, "logs", name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own descriptor
	cmd := exec.Command(exe, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRSAGA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, url: "http://" + addr, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// ready waits until the child answers /readyz (its consumers exist by
// then), or fails with the tail of its output if it exits first.
func (c *child) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited at start (%v): %s", c.name, c.err, tail(c.log))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w: %s", c.name, ctx.Err(), tail(c.log))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exited reports a child that died during the run.
func (p *procs) exited() error {
	for _, c := range p.children {
		select {
		case <-c.done:
			return fmt.Errorf("%s exited during the run (%v): %s", c.name, c.err, tail(c.log))
		default:
		}
	}
	return nil
}

func (p *procs) Client() *bus.Bus { return p.b }

func (p *procs) URL(service string) string {
	for _, c := range p.children {
		if c.name == service {
			return c.url
		}
	}
	return ""
}

func (p *procs) Usage() []procUsage {
	cpu, rss, faults := selfUsage()
	out := []procUsage{{Name: "bench + nats", CPU: cpu, PeakRSS: rss, Syscalls: procSyscalls("self"), Faults: faults, Allocs: selfAllocs()}}
	for _, c := range p.children {
		u := procUsage{Name: c.name}
		select {
		case <-c.done:
			// An exited child's I/O counts went with its /proc entry:
			// the run reads them while the children still run.
			u.CPU, u.PeakRSS, u.Faults = exitedUsage(c.cmd.ProcessState)
		default:
			pid := c.cmd.Process.Pid
			u.CPU, u.Faults = procCPU(pid)
			u.PeakRSS, u.Syscalls = procPeakRSS(pid), procSyscalls(strconv.Itoa(pid))
			u.Allocs = scrapeAllocs(c.url)
		}
		out = append(out, u)
	}
	return out
}

func (p *procs) ResetPeakRSS() bool {
	ok := resetPeakRSS("self")
	for _, c := range p.children {
		ok = resetPeakRSS(strconv.Itoa(c.cmd.Process.Pid)) && ok
	}
	return ok
}

// Stop asks every child to shut down (SIGTERM), kills those still running
// after 15s, waits for all, then stops the client and the server. Safe on
// a partly started system.
func (p *procs) Stop() []procUsage {
	last := p.Usage() // peak RSS as seen while running
	for _, c := range p.children {
		_ = terminate(c.cmd.Process)
	}
	deadline := time.After(15 * time.Second)
	for _, c := range p.children {
		select {
		case <-c.done:
		case <-deadline:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
	final := p.Usage()
	for i := range final {
		final[i].PeakRSS = max(final[i].PeakRSS, last[i].PeakRSS)
	}
	if p.b != nil {
		p.b.Close()
	}
	if p.ns != nil {
		p.ns.Stop()
	}
	return final
}

func joinDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

// tail is the last lines of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no output: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	if len(lines) == 0 || lines[0] == "" {
		return "(no output)"
	}
	return "last output: " + strings.Join(lines, " | ")
}
