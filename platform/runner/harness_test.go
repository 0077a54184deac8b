package runner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/storetest"
)

// effects records each committed side effect: the handler's own state change.
var effects = sqlite.Migrations{Component: "runnertest", FS: fstest.MapFS{
	"0001_effects.sql": {Data: []byte("CREATE TABLE effects (event_id TEXT NOT NULL);\n")},
}}

var errTransient = errors.New("transient failure")

// setup describes one runner under test; zero fields get the validator's
// consumer of requested events.
type setup struct {
	bus     bus.Config
	durable string
	subject string
	giveUp  bool
	step    contracts.State
	// effect is the handler's side effect (called once per handler run);
	// nil succeeds.
	effect func(ctx context.Context, env contracts.Envelope) error
	// out builds the outgoing event; nil emits validated from the validator.
	out   func(env contracts.Envelope) (*event.Event, error)
	fault func(point string, env contracts.Envelope) error
	// commitErr, when set, fails the commit closure of an event (after its
	// writes) with the error it returns.
	commitErr func(env contracts.Envelope) error
	// batch sets HandleBatch (built on effect and out) instead of Handle;
	// batches records the size of each call.
	batch   bool
	workers int
	// tune adjusts the runner's configuration last.
	tune func(cfg *runner.Config)
	// dbPath, when set, is the database file (so that a test can open it
	// again, as another process would); empty: a fresh temp file.
	dbPath string
}

type harness struct {
	t       testing.TB
	nats    *natsembed.Server
	b       *bus.Bus
	db      *sqlite.DB
	r       *runner.Runner
	durable string
	calls   atomic.Int64 // handler runs (side effects attempted)
	batches atomic.Int64 // HandleBatch calls
}

func start(t testing.TB, s setup) *harness {
	t.Helper()
	if s.durable == "" {
		s.durable = contracts.ConsumerValidator
	}
	if s.subject == "" {
		s.subject = contracts.SubjectMergeRequested
	}
	if s.out == nil {
		s.out = func(env contracts.Envelope) (*event.Event, error) {
			return contracts.Follow(env.Event, step.NewID(), contracts.TypeMergeValidated, contracts.ServiceValidator, time.Now(),
				contracts.Validated{Request: env.Req(), BaseSHA: strings.Repeat("b", 40), Checks: []contracts.Check{{Context: "ci", State: "success"}}})
		}
	}
	ns, b := natstest.Start(t, s.bus)
	if s.dbPath == "" {
		s.dbPath = filepath.Join(t.TempDir(), "db.sqlite")
	}
	db := sqlitetest.OpenFile(t, s.dbPath, effects)
	h := &harness{t: t, nats: ns, b: b, db: db, durable: s.durable}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))

	relayCtx, stopRelay := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		_ = (&outbox.Relay{Store: db, Pub: b, Log: log, Poll: 20 * time.Millisecond}).Run(relayCtx)
	}()
	t.Cleanup(func() { stopRelay(); <-relayDone })

	handle := func(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
		h.calls.Add(1)
		if s.effect != nil {
			if err := s.effect(ctx, env); err != nil {
				return nil, err
			}
		}
		out, err := s.out(env)
		if err != nil {
			return nil, err
		}
		return func(stx store.Tx) error {
			tx := stx.(*sqlite.Tx)
			if _, err := tx.Exec(`INSERT INTO effects (event_id) VALUES (?)`, env.Event.ID()); err != nil {
				return err
			}
			if err := tx.Emit(out); err != nil {
				return err
			}
			if s.commitErr != nil {
				return s.commitErr(env)
			}
			return nil
		}, nil
	}
	handleBatch := func(ctx context.Context, envs []contracts.Envelope, logs []*slog.Logger) ([]step.Commit, []error) {
		h.batches.Add(1)
		commits, errs := make([]step.Commit, len(envs)), make([]error, len(envs))
		for i, env := range envs {
			commits[i], errs[i] = handle(ctx, env, logs[i])
		}
		return commits, errs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := runner.Config{
		Service:  contracts.ServiceValidator,
		Consumer: bus.ConsumerSpec{Durable: s.durable, Subjects: []string{s.subject}, GiveUp: s.giveUp},
		Bus:      b,
		Store:    db,
		Handle:   handle,
		Log:      log,
		Step:     s.step,
		Backoff:  []time.Duration{5 * time.Millisecond},
		Fault:    s.fault,
		Workers:  s.workers,
	}
	if s.batch {
		cfg.Handle, cfg.HandleBatch = nil, handleBatch
	}
	if s.tune != nil {
		s.tune(&cfg)
	}
	r, err := runner.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start runner: %v", err)
	}
	h.r = r
	t.Cleanup(r.Stop) // runs before the bus and the database are closed
	return h
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	natstest.WaitFor(h.t, 15*time.Second, what, cond)
}

// waitRedelivered waits until the first message, committed but not acked,
// came again and was acked.
func (h *harness) waitRedelivered() {
	h.t.Helper()
	h.waitFor("a redelivery after the unacked commit", func() bool {
		info := h.consumer()
		return info.Delivered.Consumer >= 2 && info.NumAckPending == 0 && info.AckFloor.Stream >= 1
	})
}

func validRequest() contracts.Request {
	return storetest.Request()
}

func requested(t testing.TB, id string, r contracts.Request) *event.Event {
	t.Helper()
	e, err := contracts.NewRequested(id, "https://forge.example/acme", time.Now(), r, "")
	if err != nil {
		t.Fatalf("build requested: %v", err)
	}
	return e
}

// publish sends e as a client would and returns its stream sequence.
func (h *harness) publish(e *event.Event) uint64 {
	h.t.Helper()
	subject, _ := contracts.SubjectOf(e)
	return h.publishOn(subject, e)
}

// publishOn sends e on subject, whatever its type's subject is, and
// returns its stream sequence.
func (h *harness) publishOn(subject string, e *event.Event) uint64 {
	h.t.Helper()
	msg, err := bus.Encode(subject, e)
	if err != nil {
		h.t.Fatal(err)
	}
	ack, err := h.b.PublishMsg(h.ctx(), msg)
	if err != nil {
		h.t.Fatalf("publish %s: %v", e.ID(), err)
	}
	return ack.Sequence
}

// deadLettered is what the DLQ holds from the runner's consumer, failing
// the test unless it is n messages.
func (h *harness) deadLettered(n int) []*jetstream.RawStreamMsg {
	h.t.Helper()
	dlq := h.rawInStream(contracts.DLQStream, contracts.DLQSubject(h.durable))
	if len(dlq) != n {
		h.t.Fatalf("DLQ messages on %s: got %d, want %d", contracts.DLQSubject(h.durable), len(dlq), n)
	}
	return dlq
}

// checkCopyOf checks that the DLQ message m is the copy of event id.
func checkCopyOf(t testing.TB, m *jetstream.RawStreamMsg, id string) {
	t.Helper()
	if got := m.Header.Get("ce-id"); got != id {
		t.Errorf("DLQ copy ce-id: got %q, want %s", got, id)
	}
}

// publishAs publishes e under another Nats-Msg-Id, so that JetStream's
// dedupe does not catch the repeat: only the inbox can.
func (h *harness) publishAs(e *event.Event, msgID string) uint64 {
	h.t.Helper()
	subject, _ := contracts.SubjectOf(e)
	msg, err := bus.Encode(subject, e)
	if err != nil {
		h.t.Fatal(err)
	}
	msg.Header.Set(bus.HeaderMsgID, msgID)
	ack, err := h.b.PublishMsg(h.ctx(), msg)
	if err != nil {
		h.t.Fatal(err)
	}
	if ack.Duplicate {
		h.t.Fatalf("publish as %s: JetStream took it for a duplicate", msgID)
	}
	return ack.Sequence
}

func (h *harness) consumer() *jetstream.ConsumerInfo {
	h.t.Helper()
	c, err := h.b.JS.Consumer(h.ctx(), contracts.Stream, h.durable)
	if err != nil {
		h.t.Fatalf("consumer %s: %v", h.durable, err)
	}
	info, err := c.Info(h.ctx())
	if err != nil {
		h.t.Fatalf("consumer %s info: %v", h.durable, err)
	}
	return info
}

// settled waits until the consumer has acknowledged every message of its
// subject up to stream sequence upTo (the last input published): nothing
// is left to redeliver, so the counts that follow are final.
func (h *harness) settled(upTo uint64) *jetstream.ConsumerInfo {
	h.t.Helper()
	var info *jetstream.ConsumerInfo
	h.waitFor(fmt.Sprintf("consumer %s to ack everything up to stream seq %d", h.durable, upTo), func() bool {
		info = h.consumer()
		return info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream >= upTo
	})
	return info
}

func (h *harness) committedEffects(eventID string) int {
	h.t.Helper()
	var n int
	if err := h.db.Reader().QueryRow(`SELECT count(*) FROM effects WHERE event_id = ?`, eventID).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// outgoing waits until the outbox is empty and returns the events on
// subject in PRSAGA, decoded.
func (h *harness) outgoing(subject string) []*event.Event {
	h.t.Helper()
	h.waitFor("the outbox to be relayed", func() bool {
		n, _, err := h.db.OutboxStats(h.ctx())
		if err != nil {
			h.t.Fatal(err)
		}
		return n == 0
	})
	return h.inStream(contracts.Stream, subject)
}

func (h *harness) inStream(stream, subject string) []*event.Event {
	h.t.Helper()
	msgs := h.rawInStream(stream, subject)
	var out []*event.Event
	for _, m := range msgs {
		e, err := bus.Decode(m.Header, m.Data)
		if err != nil {
			h.t.Fatalf("decode %s message: %v", subject, err)
		}
		out = append(out, e)
	}
	return out
}

func (h *harness) rawInStream(stream, subject string) []*jetstream.RawStreamMsg {
	h.t.Helper()
	s, err := h.b.JS.Stream(h.ctx(), stream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(h.ctx(), seq)
		if err != nil {
			h.t.Fatalf("get %s msg %d: %v", stream, seq, err)
		}
		if m.Subject == subject {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) processed(eventID string) bool {
	h.t.Helper()
	ok, err := h.db.Processed(h.ctx(), h.durable, eventID)
	if err != nil {
		h.t.Fatal(err)
	}
	return ok
}

// checkOnce asserts exactly one committed effect and one outgoing event
// caused by eventID.
func (h *harness) checkOnce(eventID string) {
	h.t.Helper()
	if n := h.committedEffects(eventID); n != 1 {
		h.t.Errorf("committed effects of %s: got %d, want 1", eventID, n)
	}
	out := h.outgoing(contracts.SubjectMergeValidated)
	if len(out) != 1 {
		h.t.Fatalf("validated events in PRSAGA: got %d, want 1", len(out))
	}
	if got := out[0].Extensions()[contracts.ExtCausationID]; got != eventID {
		h.t.Errorf("outgoing causationid: got %v, want %s", got, eventID)
	}
	if !h.processed(eventID) {
		h.t.Errorf("no inbox row for %s", eventID)
	}
}
