// Package stack starts prsaga's services in one process: the embedded NATS
// server (unless a URL is configured), one SQLite database per service, the
// services' consumers and relays, and one HTTP listener serving every
// service's routes. `prsaga dev`, `serve`, `demo`, the benchmark and the
// end-to-end tests all start through here.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gcfloor"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/natsembed"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/telemetry"
	"github.com/prsaga/prsaga/platform/ydb"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Options of a stack.
type Options struct {
	Config config.Config
	// Services to run; empty means all five.
	Services []string
	// LogStdout receives every service's JSON log lines (nil: files only).
	LogStdout io.Writer
	// HTTPListener serves the routes; nil listens on Config.HTTPAddr.
	HTTPListener net.Listener
	// NoHTTP runs without any HTTP listener.
	NoHTTP bool
	// NATSListen overrides Config.NATSListen for the embedded server; "-"
	// means in-process connections only.
	NATSListen string
	// Fault points for crash tests (see runner.Fault*).
	Fault func(point string, env contracts.Envelope) error
	// Workers per consumer.
	Workers int
	// SpanExporter, when set, receives every span as it ends instead of the
	// OTLP exporter of Config.OTLPEndpoint (tests: an in-memory exporter).
	SpanExporter sdktrace.SpanExporter
}

// Stack is a running set of services.
type Stack struct {
	NATS    *natsembed.Server // nil with an external NATS
	Bus     *bus.Bus
	URL     string // base URL of the HTTP listener
	Log     *slog.Logger
	cfg     config.Config
	http    *http.Server
	running []*service.Running
	ready   []readier
	closers []func() error
	ydb     *ydb.Conn // the YDB connection the services share (store.go)
	// standbys wait to become active (standby.go); guards running after Start.
	standbys standbys

	// Telemetry holds the stack's metrics (served on /metrics) and tracer
	// providers: one registry per stack, so that stacks can run side by side.
	Telemetry *telemetry.Telemetry
}

type router interface {
	Routes(mux *http.ServeMux)
}

// readier is a component that can say it is not ready (the indexer until
// its index is open).
type readier interface {
	Ready() error
}

// Start brings the stack up; on error everything started is stopped.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	cfg := opts.Config
	s := &Stack{cfg: cfg}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	level, err := logging.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	logDir := cfg.LogDir
	newLog := func(name string) (*slog.Logger, error) {
		l, c, err := logging.New(logging.Config{Service: name, Level: level, Dir: logDir, Stdout: opts.LogStdout})
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, c.Close)
		return l, nil
	}
	if s.Log, err = newLog("prsaga"); err != nil {
		return nil, err
	}
	s.Telemetry, err = telemetry.New(ctx, telemetry.Config{OTLPEndpoint: cfg.OTLPEndpoint, Exporter: opts.SpanExporter, Log: s.Log})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.ReposDir, 0o755); err != nil {
		return nil, fmt.Errorf("repos dir: %w", err)
	}
	if err := s.connect(ctx, opts); err != nil {
		return nil, err
	}
	names := opts.Services
	if len(names) == 0 {
		names = AllServices
	}
	// The process's heap, shared by its services: the floor grows with them
	// (config.HeapFloor).
	gcfloor.Set(cfg.HeapFloor(len(names)), os.Getenv)
	mux := http.NewServeMux()
	for _, name := range names {
		// The service's goroutines carry its name as a profiler label, so
		// that a CPU profile of one process (prsaga dev, prsaga bench)
		// splits by service: go tool pprof -tags, -tagfocus=service=ledger.
		pprof.Do(ctx, pprof.Labels("service", name), func(ctx context.Context) {
			err = s.startService(ctx, name, newLog, mux, opts)
		})
		if err != nil {
			return nil, err
		}
	}
	metrics := s.Telemetry.Handler().ServeHTTP
	if !cfg.MetricsPublic {
		// Metrics name repositories and counts: a read like any other,
		// unless PRSAGA_METRICS_PUBLIC opens them to a scraper.
		metrics = httpx.Tokens(cfg.ReadTokens()).RequireWith(httpx.ReadRefusal+" (or set PRSAGA_METRICS_PUBLIC=true)", metrics)
	}
	mux.HandleFunc("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.Bus.NC.IsConnected() {
			httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "not connected to NATS"})
			return
		}
		for _, c := range s.ready {
			if err := c.Ready(); err != nil {
				httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
				return
			}
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if !opts.NoHTTP {
		if err := s.serveHTTP(opts, mux); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// startService builds the named service, adds its routes to mux and starts
// it (or leaves it on standby until it is active).
func (s *Stack) startService(ctx context.Context, name string, newLog func(string) (*slog.Logger, error), mux *http.ServeMux, opts Options) error {
	cfg := s.cfg
	log, err := newLog(name)
	if err != nil {
		return err
	}
	comp, err := s.build(ctx, name, log)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if r, ok := comp.(router); ok {
		r.Routes(mux)
	}
	if r, ok := comp.(readier); ok {
		s.ready = append(s.ready, r)
	}
	sopts := service.Options{
		Backoff:   cfg.Backoff,
		Workers:   opts.Workers,
		Fault:     opts.Fault,
		Telemetry: s.Telemetry,
		Retention: service.Retention{Inbox: cfg.RetentionInbox, Sent: cfg.RetentionSent, Interval: cfg.PruneInterval},
	}
	if a, ok := comp.(activator); ok && !a.Active() {
		s.startWhenActive(comp, a, log, sopts)
		return nil
	}
	run, err := service.Start(ctx, comp.Spec(), s.Bus, log, sopts)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.standbys.mu.Lock() // a standby taking over appends too
	s.running = append(s.running, run)
	s.standbys.mu.Unlock()
	return nil
}

// busConfig is the bus configuration of cfg.
func busConfig(cfg config.Config) bus.Config {
	return bus.Config{
		URL: cfg.NATSURL, Name: "prsaga", CredsFile: cfg.NATSCreds,
		TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey,
		Replicas: cfg.StreamReplicas, MaxAge: cfg.StreamMaxAge, Duplicates: cfg.DedupeWindow,
		AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, DLQMaxAge: cfg.RetentionDLQ,
	}
}

func (s *Stack) connect(ctx context.Context, opts Options) error {
	cfg := s.cfg
	bc := busConfig(cfg)
	// A service may start before its NATS server: it waits for it.
	bc.WaitForServer = true
	if cfg.NATSURL == "" {
		listen := cfg.NATSListen
		if opts.NATSListen != "" {
			listen = opts.NATSListen
		}
		if listen == "-" {
			listen = ""
		}
		ns, err := natsembed.Start(natsembed.Config{
			StoreDir: filepath.Join(cfg.DataDir, "nats"),
			Listen:   listen,
			Sync:     cfg.Durability == "sync",
		})
		if err != nil {
			return fmt.Errorf("embedded NATS on %s: %w", listen, err)
		}
		s.NATS = ns
		bc.InProcess = ns.Server
	}
	b, err := bus.Connect(ctx, bc)
	if err != nil {
		return err
	}
	s.Bus = b
	return b.Await(ctx, s.Log, "streams", b.EnsureStreams)
}

func (s *Stack) serveHTTP(opts Options, mux *http.ServeMux) error {
	ln := opts.HTTPListener
	if ln == nil {
		// The address config.Validate checked (HTTPListen).
		l := s.cfg.HTTPListen(opts.Services)
		var err error
		if ln, err = net.Listen("tcp", l.Addr); err != nil {
			return fmt.Errorf("HTTP listen on %s (%s): %w", l.Addr, l.Env, err)
		}
	}
	s.URL = "http://" + ln.Addr().String()
	s.http = &http.Server{
		Handler:           http.MaxBytesHandler(mux, httpx.MaxBody),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Log.Error("HTTP server stopped", "err", err)
		}
	}()
	return nil
}

// Stop stops HTTP, the services, the bus and the embedded server, and
// closes the databases, in that order.
func (s *Stack) Stop() {
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	s.stopStandbys()
	for i := len(s.running) - 1; i >= 0; i-- {
		s.running[i].Stop()
	}
	s.running = nil
	if s.Telemetry != nil {
		// The handlers and relays are done: flush their spans.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Telemetry.Shutdown(ctx); err != nil {
			s.Log.Warn("spans not exported", "err", err)
		}
		cancel()
	}
	if s.Bus != nil {
		s.Bus.Close()
	}
	if s.NATS != nil {
		s.NATS.Stop()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
	s.closers = nil
}

// ParseServices checks a comma-separated list of service names.
func ParseServices(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		ok := false
		for _, a := range AllServices {
			ok = ok || a == n
		}
		if !ok {
			return nil, fmt.Errorf("unknown service %q (one of %s)", n, strings.Join(AllServices, ", "))
		}
		out = append(out, n)
	}
	return out, nil
}
