package runner

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
)

// eventLog is the logger of one message: logging.ForEvent's, built on the
// first record logged at an enabled level. Most messages log nothing that
// is enabled, and slog's With formats its attributes at once (an
// allocation-heavy part of every message's handling).
func eventLog(base *slog.Logger, env contracts.Envelope) *slog.Logger {
	return slog.New(&eventHandler{base: base, env: env})
}

type eventHandler struct {
	base *slog.Logger
	env  contracts.Envelope
	once sync.Once
	h    slog.Handler
}

func (e *eventHandler) handler() slog.Handler {
	e.once.Do(func() { e.h = logging.ForEvent(e.base, e.env).Handler() })
	return e.h
}

// Enabled asks the base handler: the event's attributes change no level.
func (e *eventHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return e.base.Handler().Enabled(ctx, l)
}

func (e *eventHandler) Handle(ctx context.Context, r slog.Record) error {
	return e.handler().Handle(ctx, r)
}

func (e *eventHandler) WithAttrs(as []slog.Attr) slog.Handler { return e.handler().WithAttrs(as) }

func (e *eventHandler) WithGroup(name string) slog.Handler { return e.handler().WithGroup(name) }
