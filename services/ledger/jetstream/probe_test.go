package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgerjs "github.com/prsaga/prsaga/services/ledger/jetstream"
)

func TestProbeReadsBacklogAndDeadLetters(t *testing.T) {
	_, b := natstest.Start(t, bus.Config{})
	p := ledgerjs.New(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if _, err := p.Backlog(ctx, contracts.ConsumerMerger); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("backlog of a missing consumer: %v, want 'does not exist'", err)
	}
	if _, err := b.Consumer(ctx, bus.ConsumerSpec{Durable: contracts.ConsumerMerger, Subjects: []string{contracts.SubjectMergeValidated}, GiveUp: true}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := b.JS.Publish(ctx, contracts.SubjectMergeValidated, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// A publish is acknowledged once stored; the consumer counts it as
	// pending a moment later (the server signals its consumers apart).
	var bl ledger.Backlog
	var err error
	natstest.WaitFor(t, 5*time.Second, "the consumer to count 2 pending", func() bool {
		bl, err = p.Backlog(ctx, contracts.ConsumerMerger)
		return err != nil || bl.Pending >= 2
	})
	if err != nil || bl.Pending != 2 || bl.AckPending != 0 {
		t.Fatalf("backlog %+v, %v: want 2 pending", bl, err)
	}
	if err := b.DeadLetter(ctx, contracts.ConsumerMerger, &nats.Msg{Subject: contracts.SubjectMergeValidated, Header: nats.Header{bus.HeaderMsgID: {"x1"}}, Data: []byte("bad")}, "garbage"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.DeadLetters(ctx, contracts.ConsumerMerger); err != nil || n != 1 {
		t.Fatalf("dead letters of merger: %d, %v; want 1", n, err)
	}
	if n, err := p.DeadLetters(ctx, contracts.ConsumerIndexer); err != nil || n != 0 {
		t.Fatalf("dead letters of indexer: %d, %v; want 0", n, err)
	}
	if n, err := p.DeadLettersTotal(ctx); err != nil || n != 1 {
		t.Fatalf("dead letters in all: %d, %v; want 1", n, err)
	}
	b.NC.Close()
	if err := p.Ping(ctx); !errors.Is(err, ledger.ErrBusClosed) {
		t.Fatalf("ping on a closed connection: %v, want ErrBusClosed", err)
	}
}
