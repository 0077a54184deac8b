package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/outbox"
)

// future is a resolved PubAckFuture.
type future struct {
	msg *nats.Msg
	ok  chan *jetstream.PubAck
	err chan error
}

func (f *future) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *future) Err() <-chan error            { return f.err }
func (f *future) Msg() *nats.Msg               { return f.msg }

// asyncFlaky publishes asynchronously through the bus but fails the acks
// of the calls numbered in fail (the message reaches JetStream or not, as
// publishFirst says).
type asyncFlaky struct {
	b            *bus.Bus
	fail         map[int64]bool
	publishFirst bool
	calls        atomic.Int64
}

func (a *asyncFlaky) PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	return nil, errors.New("the relay must publish asynchronously")
}

func (a *asyncFlaky) PublishMsgAsync(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	n := a.calls.Add(1)
	f := &future{msg: msg, ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	if a.fail[n] && !a.publishFirst {
		f.err <- errInjected
		return f, nil
	}
	ack, err := a.b.PublishMsg(context.Background(), msg)
	switch {
	case err != nil:
		f.err <- err
	case a.fail[n]:
		f.err <- errInjected // published, ack lost
	default:
		f.ok <- ack
	}
	return f, nil
}

func TestAsyncFlushMarksWhatWasAcked(t *testing.T) {
	ctx := testContext(t)
	b, db := busDB(t)
	pub := &asyncFlaky{b: b, fail: map[int64]bool{2: true}}
	r := &outbox.Relay{Store: db, Pub: pub, Log: testLogger(t)}
	emit(t, db, "e-1", "e-2", "e-3")
	n, err := r.Flush(ctx)
	if !errors.Is(err, errInjected) || n != 2 {
		t.Fatalf("first flush: got %d, %v; want 2 marked and the failure", n, err)
	}
	if got := pending(t, db); got != 1 {
		t.Errorf("unsent after a failed ack: got %d, want 1", got)
	}
	if n, err := r.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("second flush: got %d, %v; want 1, nil", n, err)
	}
	if got := fmt.Sprint(streamIDs(t, b)); got != "[e-1 e-3 e-2]" {
		t.Errorf("stream ids: got %s, want [e-1 e-3 e-2] (all, once)", got)
	}
}

func TestAsyncFlushLostAckDedupes(t *testing.T) {
	ctx := testContext(t)
	b, db := busDB(t)
	pub := &asyncFlaky{b: b, fail: map[int64]bool{1: true}, publishFirst: true}
	r := &outbox.Relay{Store: db, Pub: pub, Log: testLogger(t)}
	emit(t, db, "e-1")
	if _, err := r.Flush(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("first flush: %v, want the lost ack", err)
	}
	if n, err := r.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("second flush: got %d, %v; want 1, nil", n, err)
	}
	if got := fmt.Sprint(streamIDs(t, b)); got != "[e-1]" {
		t.Errorf("stream ids: got %s, want [e-1] once", got)
	}
}

var _ outbox.AsyncPublisher = (*bus.Bus)(nil)

// countingAsync counts publishes through the bus.
type countingAsync struct {
	*bus.Bus
	n atomic.Int64
}

func (c *countingAsync) PublishMsgAsync(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	c.n.Add(1)
	return c.Bus.PublishMsgAsync(msg)
}

func TestRunHoldsAckedRowsUntilMarked(t *testing.T) {
	b, db := busDB(t)
	pub := &countingAsync{Bus: b}
	// Many polls pass while the acked row waits to be marked: it must not
	// be published again meanwhile.
	run(t, &outbox.Relay{Store: db, Pub: pub, Log: testLogger(t), Poll: 2 * time.Millisecond, MarkDelay: 200 * time.Millisecond})
	emit(t, db, "e-1")
	waitFor(t, 10*time.Second, "e-1 marked sent", func() bool { return pending(t, db) == 0 })
	if n := pub.n.Load(); n != 1 {
		t.Errorf("publishes: got %d, want 1", n)
	}
}
