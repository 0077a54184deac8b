// Package logging builds the services' JSON loggers: one line per record
// with `service` on every line, to stdout and to <dir>/<service>.jsonl, and
// derives per-message loggers carrying the saga's ids.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prsaga/prsaga/contracts"
)

// Config of a service logger.
type Config struct {
	Service string
	Level   slog.Level
	Dir     string    // "" = no file
	Stdout  io.Writer // nil = no console output
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
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("log dir: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(cfg.Dir, cfg.Service+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
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

// ForEvent derives the logger for handling one event.
func ForEvent(l *slog.Logger, env contracts.Envelope) *slog.Logger {
	return l.With(
		"correlation_id", env.Meta.CorrelationID,
		"pr_id", env.Req().PRID,
		"event_id", env.Event.ID(),
		"event_type", env.Event.Type(),
		"causation_id", env.Meta.CausationID,
		"attempt", env.Meta.Attempt,
	)
}
