package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/backoff"
)

// errNotConnected is Await's own error for a connection still down; it is
// Unavailable even if the connection comes up before that is asked.
var errNotConnected = errors.New("not connected to NATS")

// Unavailable reports whether err means JetStream cannot be reached yet —
// the connection is down or still being made, or the server answers that
// JetStream is not ready — rather than that the request is wrong.
func (b *Bus) Unavailable(err error) bool {
	if err == nil || b.NC.IsClosed() {
		return false
	}
	if errors.Is(err, errNotConnected) {
		return true
	}
	if !b.NC.IsConnected() {
		return true // whatever failed, it is tried again once connected
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrNoServers)
}

// Await calls fn (creating a stream or a consumer) until it succeeds, fails
// for another reason than Unavailable, or ctx ends: a service started
// before its NATS server, or while it restarts, waits for it instead of
// exiting. Each failed try is logged with the next wait; waits grow from
// 100ms to 5s, jittered.
func (b *Bus) Await(ctx context.Context, log *slog.Logger, what string, fn func(ctx context.Context) error) error {
	wait := 100 * time.Millisecond
	for tries := 1; ; tries++ {
		// A request made while disconnected would sit in the reconnect
		// buffer until the API timeout: wait for the connection first,
		// and bound each try.
		var err error
		if b.NC.IsConnected() {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = fn(tctx)
			cancel()
		} else {
			err = fmt.Errorf("%w at %s", errNotConnected, redactURL(b.cfg.URL))
		}
		if err == nil || ctx.Err() != nil || !b.Unavailable(err) {
			if err == nil && tries > 1 && log != nil {
				log.InfoContext(ctx, "JetStream available", "for", what, "tries", tries)
			}
			return err
		}
		d := backoff.Jitter(wait)
		if log != nil {
			log.WarnContext(ctx, "JetStream not available; waiting", "for", what, "try", tries, "err", err, "retry_in", d.String())
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
