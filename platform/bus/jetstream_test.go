package bus_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/store/storetest"
)

// testContext is a test's context, bounded in time.
var testContext = storetest.Context

func TestEnsureStreamsIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{Duplicates: time.Minute})
	for i := 0; i < 2; i++ { // natstest.Start already ran it once
		if err := b.EnsureStreams(ctx); err != nil {
			t.Fatalf("EnsureStreams call %d: %v", i+2, err)
		}
	}
	for _, name := range []string{contracts.Stream, contracts.DLQStream, bus.AdvisoryStream} {
		s, err := b.JS.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.MaxAge != 168*time.Hour {
			t.Errorf("stream %s MaxAge: got %v, want the 7-day default", name, info.Config.MaxAge)
		}
	}
	s, _ := b.JS.Stream(ctx, contracts.Stream)
	info, _ := s.Info(ctx)
	if info.Config.Duplicates != time.Minute {
		t.Errorf("PRSAGA Duplicates: got %v, want the configured 1m", info.Config.Duplicates)
	}
	names := b.JS.StreamNames(ctx)
	n := 0
	for range names.Name() {
		n++
	}
	if n != 3 {
		t.Errorf("streams: got %d, want 3", n)
	}
}

// storedMsg reads message seq of stream.
func storedMsg(t *testing.T, ctx context.Context, b *bus.Bus, stream string, seq uint64) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := b.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPublishDedupesOnEventID(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{})
	e := requested(t, "req-1")
	for i := 0; i < 2; i++ {
		if err := b.Publish(ctx, e); err != nil {
			t.Fatalf("publish %d: %v", i+1, err)
		}
	}
	if got := natstest.Msgs(t, ctx, b, contracts.Stream); got != 1 {
		t.Errorf("PRSAGA messages after publishing one event twice: got %d, want 1", got)
	}
	m := storedMsg(t, ctx, b, contracts.Stream, 1)
	if m.Subject != contracts.SubjectMergeRequested {
		t.Errorf("subject: got %q, want %q", m.Subject, contracts.SubjectMergeRequested)
	}
	got, err := bus.Decode(m.Header, m.Data)
	if err != nil {
		t.Fatalf("decode stored message: %v", err)
	}
	if got.ID() != e.ID() {
		t.Errorf("stored event id: got %q, want %q", got.ID(), e.ID())
	}
}

func TestPublishUnknownTypeFails(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{})
	e := requested(t, "req-1")
	e.SetType("prsaga.merge.bogus.v1")
	if err := b.Publish(ctx, e); err == nil {
		t.Error("publish of an event type with no subject: got nil error")
	}
}

func TestDeadLetter(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{})
	orig, err := bus.Encode(contracts.SubjectMergeRequested, requested(t, "req-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeadLetter(ctx, "validator", orig, "pr_id is bad\nreally"); err != nil {
		t.Fatalf("dead-letter: %v", err)
	}
	// The same consumer again: a redelivery of the same poison message.
	if err := b.DeadLetter(ctx, "validator", orig, "pr_id is bad"); err != nil {
		t.Fatalf("dead-letter again: %v", err)
	}
	if got := natstest.Msgs(t, ctx, b, contracts.DLQStream); got != 1 {
		t.Fatalf("DLQ messages after one consumer dead-lettered one message twice: got %d, want 1", got)
	}
	m := storedMsg(t, ctx, b, contracts.DLQStream, 1)
	if want := contracts.DLQSubject("validator"); m.Subject != want {
		t.Errorf("DLQ subject: got %q, want %q", m.Subject, want)
	}
	if !bytes.Equal(m.Data, orig.Data) {
		t.Errorf("DLQ body: got %s, want the original %s", m.Data, orig.Data)
	}
	for k, vs := range orig.Header {
		if k == bus.HeaderMsgID {
			continue
		}
		if got := m.Header.Get(k); got != vs[0] {
			t.Errorf("DLQ header %s: got %q, want the original %q", k, got, vs[0])
		}
	}
	if got := m.Header.Get(contracts.DLQReasonHeader); got != "pr_id is bad really" {
		t.Errorf("%s: got %q, want the reason on one line", contracts.DLQReasonHeader, got)
	}
	if got, want := m.Header.Get(bus.HeaderMsgID), "dlq.validator.req-1"; got != want {
		t.Errorf("DLQ Nats-Msg-Id: got %q, want %q", got, want)
	}
	if _, err := bus.Decode(m.Header, m.Data); err != nil {
		t.Errorf("the DLQ copy no longer decodes: %v", err)
	}

	// Another consumer's copy of the same message is not a duplicate.
	if err := b.DeadLetter(ctx, "ledger", orig, "pr_id is bad"); err != nil {
		t.Fatalf("dead-letter by ledger: %v", err)
	}
	if got := natstest.Msgs(t, ctx, b, contracts.DLQStream); got != 2 {
		t.Errorf("DLQ messages after two consumers dead-lettered one message: got %d, want 2", got)
	}
	// A long reason is cut to a bounded, still valid UTF-8 header value.
	if err := b.DeadLetter(ctx, "notifier", orig, strings.Repeat("é", 600)); err != nil {
		t.Fatalf("dead-letter by notifier: %v", err)
	}
	m = storedMsg(t, ctx, b, contracts.DLQStream, 3)
	if r := m.Header.Get(contracts.DLQReasonHeader); len(r) > 1024 || len(r) < 1000 || !utf8.ValidString(r) {
		t.Errorf("long reason: got %d bytes (valid UTF-8: %v), want 1000-1024 bytes of valid UTF-8", len(r), utf8.ValidString(r))
	}
	if got := orig.Header.Get(bus.HeaderMsgID); got != "req-1" {
		t.Errorf("DeadLetter changed the original's Nats-Msg-Id to %q", got)
	}
}

func TestDeadLetterWithoutMsgID(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{})
	for _, body := range []string{"garbage one", "garbage two"} {
		if _, err := b.JS.Publish(ctx, contracts.SubjectMergeRequested, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := b.Consumer(ctx, bus.ConsumerSpec{Durable: "validator", Subjects: []string{contracts.SubjectMergeRequested}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var n int
	for jm := range batch.Messages() {
		n++
		// A caller of the jetstream API can only hand over a plain copy.
		orig := &nats.Msg{Subject: jm.Subject(), Header: jm.Headers(), Data: jm.Data(), Reply: jm.Reply()}
		for i := 0; i < 2; i++ { // the same message twice: one DLQ copy
			if err := b.DeadLetter(ctx, "validator", orig, "not a CloudEvent"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 2 {
		t.Fatalf("fetched %d messages, want 2 (batch error: %v)", n, batch.Error())
	}
	if got := natstest.Msgs(t, ctx, b, contracts.DLQStream); got != 2 {
		t.Fatalf("DLQ messages after dead-lettering two different id-less messages: got %d, want 2", got)
	}
	ids := map[string]bool{}
	for seq := uint64(1); seq <= 2; seq++ {
		m := storedMsg(t, ctx, b, contracts.DLQStream, seq)
		id := m.Header.Get(bus.HeaderMsgID)
		if !strings.HasPrefix(id, "dlq.validator.") || len(id) <= len("dlq.validator.") {
			t.Errorf("DLQ Nats-Msg-Id: got %q, want dlq.validator.<something>", id)
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Errorf("DLQ Nats-Msg-Ids: got %v, want two different ids", ids)
	}
}

func TestConsumerDeliveryBudget(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{MaxDeliver: 3, AckWait: 2 * time.Second})
	tests := []struct {
		spec bus.ConsumerSpec
		want int
	}{
		{bus.ConsumerSpec{Durable: "merger", Subjects: []string{contracts.SubjectMergeValidated}, GiveUp: true}, 3},
		{bus.ConsumerSpec{Durable: "ledger", Subjects: []string{"prsaga.merge.>", "prsaga.saga.>"}}, -1},
	}
	for _, tt := range tests {
		c, err := b.Consumer(ctx, tt.spec)
		if err != nil {
			t.Fatalf("consumer %s: %v", tt.spec.Durable, err)
		}
		// Creating it again (every service start) must not fail.
		if _, err := b.Consumer(ctx, tt.spec); err != nil {
			t.Fatalf("consumer %s again: %v", tt.spec.Durable, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.MaxDeliver != tt.want {
			t.Errorf("consumer %s MaxDeliver: got %d, want %d", tt.spec.Durable, info.Config.MaxDeliver, tt.want)
		}
		if info.Config.AckWait != 2*time.Second {
			t.Errorf("consumer %s AckWait: got %v, want 2s", tt.spec.Durable, info.Config.AckWait)
		}
		if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
			t.Errorf("consumer %s AckPolicy: got %v, want explicit", tt.spec.Durable, info.Config.AckPolicy)
		}
	}
}

func TestMaxDeliveriesAdvisoryIsKept(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{MaxDeliver: 2})
	c, err := b.Consumer(ctx, bus.ConsumerSpec{Durable: "merger", Subjects: []string{contracts.SubjectMergeRequested}, GiveUp: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, requested(t, "req-1")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	// The server gives up (and advises) when it next tries to deliver, that
	// is while a pull request waits.
	if m, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond)); err == nil {
		t.Fatalf("a third delivery (%d of MaxDeliver 2)", func() uint64 { md, _ := m.Metadata(); return md.NumDelivered }())
	}
	// The advisory is a core NATS message: only the advisory stream keeps
	// it for the ledger to count.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for natstest.Msgs(t, ctx, b, bus.AdvisoryStream) != 1 {
		select {
		case <-deadline.C:
			t.Fatalf("advisory stream holds %d messages after MaxDeliver was reached, want 1", natstest.Msgs(t, ctx, b, bus.AdvisoryStream))
		case <-tick.C:
		}
	}
}

func TestCloseWaitsForTheDrain(t *testing.T) {
	ctx := testContext(t)
	_, b := natstest.Start(t, bus.Config{})
	if err := b.Publish(ctx, requested(t, "req-1")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if !b.NC.IsClosed() {
		t.Errorf("connection status after Close: got %v, want closed", b.NC.Status())
	}
	b.Close() // and natstest's cleanup: harmless
}

var requested = storetest.Requested
