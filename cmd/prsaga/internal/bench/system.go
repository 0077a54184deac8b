package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
)

// system is the five services as the benchmark sees them, whichever way
// they run.
type system interface {
	// Client is the benchmark's own connection to JetStream.
	Client() *bus.Bus
	// URL is the base URL of a service's HTTP routes.
	URL(service string) string
	// Usage reports CPU time so far and peak RSS per process.
	Usage() []procUsage
	// ResetPeakRSS starts every process's peak RSS afresh from its current
	// RSS; false when some process's could not be.
	ResetPeakRSS() bool
	// Stop stops every service and process and releases the connection;
	// it returns the final usage (for processes that exited, their rusage).
	Stop() []procUsage
}

// procUsage is one process's resource use.
type procUsage struct {
	Name    string
	CPU     time.Duration
	PeakRSS int64
	// Syscalls so far (/proc/<pid>/io); nil where /proc does not say.
	Syscalls *SyscallCount
	// Faults is the page faults so far (minor and major); -1 where unknown.
	Faults int64
	// Allocs is what its Go runtime allocated so far; nil where unknown
	// (an exited child, a failed scrape).
	Allocs *AllocCount
}

// busConfig is the bus configuration of cfg, for the benchmark's client.
func busConfig(cfg config.Config, name string) bus.Config {
	return bus.Config{
		URL: cfg.NATSURL, Name: name,
		Replicas: cfg.StreamReplicas, MaxAge: cfg.StreamMaxAge, Duplicates: cfg.DedupeWindow,
		AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, DLQMaxAge: cfg.RetentionDLQ,
	}
}

// inproc runs the stack in this process: embedded NATS without a TCP
// listener, every service, one HTTP listener on a loopback port.
type inproc struct {
	st *stack.Stack
	b  *bus.Bus
}

// inprocConfig points the configuration at dir.
func inprocConfig(cfg config.Config, dir string) config.Config {
	cfg.NATSURL = ""
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.ReposDir = filepath.Join(dir, "repos")
	cfg.Store = "sqlite://" + filepath.Join(dir, "data", "db")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.APIToken, cfg.StatusToken, cfg.ReadToken = "", "", ""
	return cfg
}

func startInproc(ctx context.Context, cfg config.Config) (*inproc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	st, err := stack.Start(ctx, stack.Options{Config: cfg, HTTPListener: ln, NATSListen: "-"})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start services: %w", err)
	}
	bc := busConfig(cfg, "prsaga-bench")
	bc.InProcess = st.NATS.Server
	b, err := bus.Connect(ctx, bc)
	if err != nil {
		st.Stop()
		return nil, err
	}
	return &inproc{st: st, b: b}, nil
}

func (s *inproc) Client() *bus.Bus  { return s.b }
func (s *inproc) URL(string) string { return s.st.URL }
func (s *inproc) Usage() []procUsage {
	cpu, rss, faults := selfUsage()
	return []procUsage{{Name: "prsaga (all services)", CPU: cpu, PeakRSS: rss, Syscalls: procSyscalls("self"), Faults: faults, Allocs: selfAllocs()}}
}

func (s *inproc) ResetPeakRSS() bool { return resetPeakRSS("self") }

func (s *inproc) Stop() []procUsage {
	s.b.Close()
	s.st.Stop()
	return s.Usage()
}
