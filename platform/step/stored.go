package step

import (
	"context"
	"time"
)

type storedAtKey struct{}

// WithStoredAt returns ctx carrying the time the message being handled was
// stored in its stream: JetStream's own timestamp of the message, set by
// the server when it stored it, which no publisher chooses. The runner
// adds it to the context it hands a Handler.
func WithStoredAt(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, storedAtKey{}, at)
}

// StoredAt is the time WithStoredAt put in ctx; ok is false when there is
// none (the event did not come from the stream: a test, the ledger's own
// watchdog).
func StoredAt(ctx context.Context) (at time.Time, ok bool) {
	at, ok = ctx.Value(storedAtKey{}).(time.Time)
	return at, ok && !at.IsZero()
}
