package service_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/storetest"
)

// surroundings is what a service starts in, for a test: a bounded
// context, a bus on an embedded NATS, a fresh database and a logger of
// warnings.
func surroundings(t *testing.T) (context.Context, *bus.Bus, *sqlite.DB, *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	_, b := natstest.Start(t, bus.Config{})
	return ctx, b, sqlitetest.Open(t), slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// A service started with one consumer turns a requested event into a
// validated one on the bus: consumer, transaction, outbox and relay wired.
func TestServiceConsumesAndRelays(t *testing.T) {
	ctx, b, db, log := surroundings(t)
	onRequested := func(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
		out, err := contracts.Follow(env.Event, step.NewID(), contracts.TypeMergeValidated, contracts.ServiceValidator, time.Now(),
			contracts.Validated{Request: env.Req()})
		if err != nil {
			return nil, err
		}
		return func(tx store.Tx) error { return tx.Emit(out) }, nil
	}
	run, err := service.Start(ctx, service.Spec{
		Name: contracts.ServiceValidator,
		DB:   db,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerValidator, Subjects: []string{contracts.SubjectMergeRequested}, GiveUp: true},
			Step:   contracts.StateValidating,
			Handle: onRequested,
		}},
	}, b, log, service.Options{Backoff: []time.Duration{5 * time.Millisecond}, RelayPoll: time.Hour})
	if err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(run.Stop)

	if err := b.Publish(ctx, storetest.Requested(t, "req-1")); err != nil {
		t.Fatal(err)
	}
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatalf("waiting for the validated event: %v", err)
		}
		if info.State.Msgs >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no validated event within 20s")
		case <-tick.C:
		}
	}
	m, err := s.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	e, err := bus.Decode(m.Header, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if e.Type() != contracts.TypeMergeValidated || m.Subject != contracts.SubjectMergeValidated {
		t.Errorf("second message: type %q on %q, want validated on %q", e.Type(), m.Subject, contracts.SubjectMergeValidated)
	}
	run.Stop()
	run.Stop() // and t.Cleanup's: harmless
}

func TestServiceStartFailsOnBadConsumer(t *testing.T) {
	ctx, b, db, log := surroundings(t)
	ok := service.Consumer{Spec: bus.ConsumerSpec{Durable: "good", Subjects: []string{contracts.SubjectMergeRequested}}}
	bad := service.Consumer{Spec: bus.ConsumerSpec{Durable: "bad.name", Subjects: []string{contracts.SubjectMergeRequested}}}
	run, err := service.Start(ctx, service.Spec{Name: "validator", DB: db, Consumers: []service.Consumer{ok, bad}}, b, log, service.Options{})
	if err == nil {
		run.Stop()
		t.Fatal("start with an invalid durable name: got nil error")
	}
}
