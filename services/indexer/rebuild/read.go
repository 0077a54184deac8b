package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Skip reasons: why an event gave no document.
const (
	SkipUndecodable    = "undecodable"     // not a CloudEvent
	SkipInvalidEvent   = "invalid_event"   // fails the contract's checks of attributes and identity
	SkipInvalidPayload = "invalid_payload" // a payload field fails validation
	SkipNotNotified    = "not_notified"    // another event type on the notified subject
)

// skipped is an event that gives no document, and why.
type skipped struct {
	reason string
	err    error
}

func (s *skipped) Error() string { return s.reason + ": " + s.err.Error() }

// open checks a message with the checks the indexer's runner makes before
// handing it to the indexer (bus.Open, bus.CheckPayload): what the runner
// dead-letters gives no document here either.
func open(m jetstream.Msg) (contracts.Envelope, error) {
	env, err := bus.Open(m.Subject(), m.Headers(), m.Data())
	switch {
	case errors.Is(err, bus.ErrUndecodable):
		return contracts.Envelope{}, &skipped{SkipUndecodable, err}
	case err != nil:
		return contracts.Envelope{}, &skipped{SkipInvalidEvent, err}
	}
	// The type before the payload: an event of another type (which the
	// route refuses on the notified subjects) is not_notified, valid or not.
	if typ := env.Event.Type(); typ != contracts.TypeNotified {
		return contracts.Envelope{}, &skipped{SkipNotNotified, fmt.Errorf("event type %q", typ)}
	}
	if err := bus.CheckPayload(env); err != nil {
		return contracts.Envelope{}, &skipped{SkipInvalidPayload, err}
	}
	return env, nil
}

// span is the part of the stream a rebuild reads: up to its last sequence
// as of the start, so that a rebuild ends even while events keep coming.
type span struct {
	first, last uint64
}

func streamSpan(ctx context.Context, js jetstream.JetStream) (span, error) {
	s, err := js.Stream(ctx, contracts.Stream)
	if err != nil {
		return span{}, fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return span{}, fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	return span{first: info.State.FirstSeq, last: info.State.LastSeq}, nil
}

// each calls f with every notified message of the span, in stream order,
// and the number of notified messages after it (for progress). It reads
// with an ordered consumer: no acks, nothing left on the server after.
func each(ctx context.Context, js jetstream.JetStream, sp span, f func(m jetstream.Msg, pending uint64) error) error {
	if sp.last == 0 {
		return nil // an empty stream
	}
	c, err := js.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: contracts.SubjectsOf(contracts.TypeNotified),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	if info.NumPending == 0 {
		return nil
	}
	it, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	defer it.Stop()
	// Next takes no context: stopping the iterator ends a Next waiting.
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read %s: %w", contracts.Stream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read %s: %w", contracts.Stream, err)
		}
		if md.Sequence.Stream > sp.last {
			return nil
		}
		if err := f(m, md.NumPending); err != nil {
			return err
		}
		// No notified event after this one yet: none before sp.last either,
		// and a Next now would wait for one to be published.
		if md.NumPending == 0 || md.Sequence.Stream == sp.last {
			return nil
		}
	}
}

// asSkipped returns the skip an error of open is.
func asSkipped(err error) (*skipped, bool) {
	var s *skipped
	ok := errors.As(err, &s)
	return s, ok
}
