package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// streamReader reads the stream's events on one subject from its start,
// opened as contracts envelopes.
type streamReader struct {
	t    *testing.T
	ctx  context.Context
	cons jetstream.Consumer
}

// readStream reads subject until the test ends or timeout passes.
func readStream(t *testing.T, b *bus.Bus, subject string, timeout time.Duration) *streamReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	cons, err := b.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	return &streamReader{t: t, ctx: ctx, cons: cons}
}

// next waits for the next event until the reader's timeout.
func (r *streamReader) next() (contracts.Envelope, error) {
	r.t.Helper()
	return r.fetch(jetstream.FetchContext(r.ctx))
}

// within waits for the next event for at most d.
func (r *streamReader) within(d time.Duration) (contracts.Envelope, error) {
	r.t.Helper()
	return r.fetch(jetstream.FetchMaxWait(d))
}

// fetch returns the error of waiting; an event that does not decode or
// open fails the test.
func (r *streamReader) fetch(opt jetstream.FetchOpt) (contracts.Envelope, error) {
	r.t.Helper()
	m, err := r.cons.Next(opt)
	if err != nil {
		return contracts.Envelope{}, err
	}
	e, err := bus.Decode(m.Headers(), m.Data())
	if err != nil {
		r.t.Fatal(err)
	}
	en, err := contracts.Open(e)
	if err != nil {
		r.t.Fatalf("%s does not open: %v", e.Type(), err)
	}
	return en, nil
}
