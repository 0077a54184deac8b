package outbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// publishes records the relay's telemetry: each publish's event id and
// how it ended.
type publishes struct {
	mu      sync.Mutex
	service string
	ended   []string
}

func (p *publishes) Publishing(_ context.Context, service string, msg *nats.Msg) func(error) {
	id := msg.Header.Get("ce-id")
	p.mu.Lock()
	p.service = service
	p.mu.Unlock()
	return func(err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			id += " failed"
		}
		p.ended = append(p.ended, id)
	}
}

// Every publish is reported once with JetStream's answer, on the
// synchronous and the asynchronous path alike.
func TestRelayReportsEveryPublish(t *testing.T) {
	_, b := natstest.Start(t, bus.Config{})
	for _, c := range []struct {
		name string
		pub  outbox.Publisher
	}{
		{"sync", &flaky{pub: b, fail: map[int64]bool{2: true}}},
		{"async", &asyncFlaky{b: b, fail: map[int64]bool{2: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := sqlitetest.Open(t)
			p := &publishes{}
			r := &outbox.Relay{Store: db, Pub: c.pub, Log: testLogger(t), Telemetry: p, Service: "merger"}
			emit(t, db, c.name+"-1", c.name+"-2", c.name+"-3")
			if _, err := r.Flush(testContext(t)); !errors.Is(err, errInjected) {
				t.Fatalf("flush: %v, want the injected failure", err)
			}
			want := []string{c.name + "-1", c.name + "-2 failed", c.name + "-3"}
			if c.name == "sync" { // the synchronous path stops at the failure
				want = want[:2]
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if !slices.Equal(p.ended, want) || p.service != "merger" {
				t.Errorf("publishes %v by %q, want %v by merger", p.ended, p.service, want)
			}
		})
	}
}
