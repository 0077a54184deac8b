// Package natsembed runs nats-server with JetStream inside the process, for
// `prsaga dev`, the demo, the benchmark and tests.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config of an embedded server.
type Config struct {
	// StoreDir holds JetStream's files (the server appends /jetstream).
	StoreDir string
	// Listen is host:port for outside clients; "" means no listener at all
	// (in-process connections only); port 0 or -1 picks a free port.
	Listen string
	// Sync makes JetStream fsync every write (PRSAGA_DURABILITY=sync).
	Sync bool
	// Name of the server; defaults to "prsaga".
	Name string
}

// Server is a running embedded nats-server.
type Server struct {
	*server.Server
}

// Start starts the server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		// An empty store dir would fall back to a directory shared by every
		// run on the machine.
		return nil, errors.New("natsembed: StoreDir is required")
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true, // the host process owns its signals
		NoLog:      true,
		SyncAlways: cfg.Sync,
		MaxPayload: 8 << 20,
	}
	if opts.ServerName == "" {
		opts.ServerName = "prsaga"
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("natsembed: listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("natsembed: listen port %q: %w", port, err)
		}
		if p == 0 {
			p = server.RANDOM_PORT // 0 would mean the default 4222
		}
		opts.Host, opts.Port = host, p
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("natsembed: server not ready after 10s (is the port in use?)")
	}
	return &Server{s}, nil
}

// Addr is the client URL outside processes use ("" when not listening).
func (s *Server) Addr() string {
	if s.Server.Addr() == nil {
		return ""
	}
	return s.ClientURL()
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}
