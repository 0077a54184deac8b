// Package logging builds the services' JSON loggers: one line per record
// with `service` on every line, to stdout and to <dir>/<service>.jsonl
// (rotated by size), and derives per-message loggers carrying the saga's
// ids — what `prsaga trace` stitches into one timeline.
package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/prsaga/prsaga/contracts"
)

// Config of a service logger.
type Config struct {
	Service string
	Level   slog.Level
	Dir     string    // "" = no file
	Stdout  io.Writer // nil = no console output
	// MaxSizeMB is the size at which <service>.jsonl is rotated (renamed to
	// <service>-<time>.jsonl, which `prsaga trace` still reads); default 100.
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept; default 5.
	MaxBackups int
}

// ParseLevel reads PRSAGA_LOG_LEVEL (debug, info, warn, error).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("log level %q is not one of debug, info, warn, error", s)
	}
	return l, nil
}

// New returns the logger and a closer for its file.
func New(cfg Config) (*slog.Logger, io.Closer, error) {
	var ws []io.Writer
	var closer io.Closer = io.NopCloser(nil)
	if cfg.Stdout != nil {
		ws = append(ws, cfg.Stdout)
	}
	if cfg.Dir != "" {
		f, err := openFile(cfg)
		if err != nil {
			return nil, nil, err
		}
		ws = append(ws, f)
		closer = f
	}
	w := &lockedWriter{w: io.MultiWriter(ws...)}
	if len(ws) == 0 {
		w.w = io.Discard
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: cfg.Level})
	return slog.New(h).With("service", cfg.Service), closer, nil
}

// openFile opens <dir>/<service>.jsonl for appending, rotated by size.
func openFile(cfg Config) (*lumberjack.Logger, error) {
	if cfg.Service == "" || strings.ContainsAny(cfg.Service, `/\`) || cfg.Service == "." || cfg.Service == ".." {
		return nil, fmt.Errorf("log file: service name %q cannot name a file", cfg.Service)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	name := filepath.Join(cfg.Dir, cfg.Service+".jsonl")
	// Created here so that it is readable by others (lumberjack would make
	// it 0600); rotation keeps the mode of the file it rotates.
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	size, backups := cfg.MaxSizeMB, cfg.MaxBackups
	if size <= 0 {
		size = 100
	}
	if backups <= 0 {
		backups = 5
	}
	return &lumberjack.Logger{Filename: name, MaxSize: size, MaxBackups: backups, LocalTime: false}, nil
}

// lockedWriter keeps lines whole when several handlers share one file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ForEvent derives the logger for handling one event: the saga's ids, and
// the trace and span ids of the event's W3C traceparent when it has one
// (inside a runner, the handling span's), so that a log line leads to its
// trace.
func ForEvent(l *slog.Logger, env contracts.Envelope) *slog.Logger {
	return slog.New(l.Handler().WithAttrs(EventAttrs(env)))
}

// EventAttrs are the attributes ForEvent adds, in their order on a line.
func EventAttrs(env contracts.Envelope) []slog.Attr {
	as := make([]slog.Attr, 0, 8)
	as = append(as,
		slog.String("correlation_id", env.Meta.CorrelationID),
		slog.String("pr_id", env.Req().PRID),
		slog.String("event_id", env.Event.ID()),
		slog.String("event_type", env.Event.Type()),
		slog.String("causation_id", env.Meta.CausationID),
		slog.Int("attempt", env.Meta.Attempt),
	)
	if traceID, spanID, err := ParseTraceParent(env.Meta.TraceParent); err == nil {
		as = append(as, slog.String("trace_id", traceID), slog.String("span_id", spanID))
	}
	return as
}

// ParseTraceParent returns the trace id and parent span id of a W3C
// traceparent ("00-<32 hex>-<16 hex>-<2 hex>"), both lower-case hex.
func ParseTraceParent(tp string) (traceID, spanID string, err error) {
	parts := strings.Split(tp, "-")
	if len(tp) < 55 || len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 ||
		!lowerHex(tp[:55]) || parts[1] == strings.Repeat("0", 32) || parts[2] == strings.Repeat("0", 16) ||
		(parts[0] == "00" && len(parts) != 4) {
		return "", "", errors.New("not a W3C traceparent")
	}
	return parts[1], parts[2], nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}
