package runner

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
)

// eventLog is the logger of one message: its lines are logging.ForEvent's.
// Most messages log one line or none, so nothing is derived up front: slog's
// WithAttrs formats the attributes at once into a handler of their own (an
// allocation-heavy part of every message's handling), where a record can
// simply carry them in front of its own.
func eventLog(base *slog.Logger, env contracts.Envelope) *slog.Logger {
	return slog.New(&eventHandler{base: base.Handler(), env: env})
}

type eventHandler struct {
	base slog.Handler
	env  contracts.Envelope
	once sync.Once
	h    slog.Handler // ForEvent's handler, for WithAttrs and WithGroup
}

func (e *eventHandler) derived() slog.Handler {
	e.once.Do(func() { e.h = e.base.WithAttrs(logging.EventAttrs(e.env)) })
	return e.h
}

// Enabled asks the base handler: the event's attributes change no level.
func (e *eventHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return e.base.Enabled(ctx, l)
}

// Handle writes r with the event's attributes ahead of its own, as the
// derived handler would print them (no group is open on this handler).
func (e *eventHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(logging.EventAttrs(e.env)...)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return e.base.Handle(ctx, out)
}

func (e *eventHandler) WithAttrs(as []slog.Attr) slog.Handler { return e.derived().WithAttrs(as) }

func (e *eventHandler) WithGroup(name string) slog.Handler { return e.derived().WithGroup(name) }
