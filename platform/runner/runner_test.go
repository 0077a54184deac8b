package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

func TestHappyPath(t *testing.T) {
	h := start(t, setup{})
	e := requested(t, "req-1", validRequest())
	h.settled(h.publish(e))
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1", n)
	}
	out := h.outgoing(contracts.SubjectMergeValidated)[0]
	env, err := contracts.Open(out)
	if err != nil {
		t.Fatalf("the outgoing event breaks the contract: %v", err)
	}
	if env.Meta.CorrelationID != "req-1" || out.Source() != "/prsaga/validator" || out.Subject() != "acme/widgets#1" {
		t.Errorf("outgoing: correlation %q source %q subject %q; want req-1, /prsaga/validator, acme/widgets#1",
			env.Meta.CorrelationID, out.Source(), out.Subject())
	}
}

func TestHandlerFailingOnceIsRetried(t *testing.T) {
	var failures atomic.Int64
	h := start(t, setup{effect: func(context.Context, contracts.Envelope) error {
		if failures.Add(1) == 1 {
			return errTransient
		}
		return nil
	}})
	info := h.settled(h.publish(requested(t, "req-1", validRequest())))
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 2 {
		t.Errorf("handler runs: got %d, want 2 (one failure, one retry)", n)
	}
	if info.Delivered.Consumer != 2 {
		t.Errorf("deliveries: got %d, want 2", info.Delivered.Consumer)
	}
}

func TestDuplicateDeliveryHasOneEffect(t *testing.T) {
	h := start(t, setup{})
	e := requested(t, "req-1", validRequest())
	h.publishAs(e, "copy-1")
	h.settled(h.publishAs(e, "copy-2")) // same ce-id, JetStream keeps both
	h.checkOnce("req-1")
	t.Logf("handler ran %d times for two deliveries", h.calls.Load())
}

func TestCrashAfterCommitIsRedeliveredAndDropped(t *testing.T) {
	var faults atomic.Int64
	h := start(t, setup{
		bus: bus.Config{AckWait: 500 * time.Millisecond},
		fault: func(point string, env contracts.Envelope) error {
			if point == runner.FaultAfterCommit && faults.Add(1) == 1 {
				return errors.New("crash after commit")
			}
			return nil
		},
	})
	h.publish(requested(t, "req-1", validRequest()))
	h.waitRedelivered()
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1 (the inbox drops the redelivery before the handler)", n)
	}
	if n := faults.Load(); n != 1 {
		t.Errorf("after-commit fault points reached: got %d, want 1 (not on the dropped duplicate)", n)
	}
}

func TestCrashAfterEffectIsRetried(t *testing.T) {
	var faults atomic.Int64
	h := start(t, setup{fault: func(point string, env contracts.Envelope) error {
		if point == runner.FaultAfterEffect && faults.Add(1) == 1 {
			return errors.New("crash after effect")
		}
		return nil
	}})
	h.settled(h.publish(requested(t, "req-1", validRequest())))
	h.checkOnce("req-1")
	if n := h.calls.Load(); n != 2 {
		t.Errorf("handler runs: got %d, want 2 (the effect is repeated, committed once)", n)
	}
}

func TestUndecodableMessageIsDeadLettered(t *testing.T) {
	h := start(t, setup{})
	// Not a CloudEvent at all.
	if _, err := h.b.JS.Publish(h.ctx(), contracts.SubjectMergeRequested, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	// A CloudEvent that no saga can own.
	bad := validRequest()
	bad.PRID, bad.Repo = "../../etc#1", "../../etc"
	h.publish(requested(t, "req-bad", bad))
	// A decodable request with a valid PR id but bad fields is for the
	// handler to answer (invalid_request), not dead-lettered.
	partial := validRequest()
	partial.HeadSHA = "not-a-sha"
	h.publish(requested(t, "req-partial", partial))
	// The consumer is not blocked: a valid event behind them is handled.
	h.settled(h.publish(requested(t, "req-ok", validRequest())))

	dlq := h.deadLettered(2)
	garbage, badID := dlq[0], dlq[1]
	if badID.Header.Get("ce-id") == "" { // workers dead-letter in any order
		garbage, badID = badID, garbage
	}
	if string(garbage.Data) != "garbage" {
		t.Errorf("DLQ body: got %q, want the original %q", garbage.Data, "garbage")
	}
	if r := garbage.Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, "ce-specversion") {
		t.Errorf("DLQ reason %q does not name the problem (no ce-specversion)", r)
	}
	if got := garbage.Header.Get(bus.HeaderMsgID); got != "dlq."+h.durable+".seq1" {
		t.Errorf("DLQ Nats-Msg-Id: got %q, want dlq.%s.seq1", got, h.durable)
	}
	if r := badID.Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, "pr_id") {
		t.Errorf("DLQ reason %q does not name the problem (pr_id)", r)
	}
	if got := badID.Header.Get("ce-id"); got != "req-bad" {
		t.Errorf("DLQ copy ce-id: got %q, want the original header req-bad", got)
	}
	if got := badID.Header.Get(bus.HeaderMsgID); got != "dlq."+h.durable+".req-bad" {
		t.Errorf("DLQ Nats-Msg-Id: got %q, want dlq.%s.req-bad", got, h.durable)
	}

	if n := h.committedEffects("req-ok"); n != 1 {
		t.Errorf("committed effects of the valid event after the poison: got %d, want 1", n)
	}
	if n := h.committedEffects("req-partial"); n != 1 {
		t.Errorf("committed effects of the invalid-but-attributable request: got %d, want 1 (the handler answers it)", n)
	}
	if h.processed("req-bad") {
		t.Error("the dead-lettered event has an inbox row")
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("handler runs: got %d, want 2 (req-partial and req-ok)", n)
	}
}

func TestStepEventFromWrongSourceIsDeadLettered(t *testing.T) {
	h := startMerger(t)
	req := requested(t, "req-1", validRequest())
	h.publish(validatedOf(t, req, "val-evil", "/evil"))
	h.settled(h.publish(validatedOf(t, req, "val-ok", contracts.Source(contracts.ServiceValidator))))

	dlq := h.deadLettered(1)
	if r := dlq[0].Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, "source") || !strings.Contains(r, "/evil") {
		t.Errorf("DLQ reason %q does not name the bad source", r)
	}
	checkCopyOf(t, dlq[0], "val-evil")
	if n := h.committedEffects("val-evil"); n != 0 {
		t.Errorf("committed effects of the forged event: got %d, want 0", n)
	}
	if n := h.committedEffects("val-ok"); n != 1 {
		t.Errorf("committed effects of the genuine event: got %d, want 1", n)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1 (never for the forged event)", n)
	}
}

func TestRetriesExhaustedEmitsStepFailed(t *testing.T) {
	h := start(t, setup{
		bus:    bus.Config{MaxDeliver: 2},
		giveUp: true,
		step:   contracts.StateValidating,
		effect: func(context.Context, contracts.Envelope) error { return errTransient },
	})
	h.settled(h.publish(requested(t, "req-1", validRequest())))

	failed := h.outgoing(contracts.StepFailedSubject(contracts.ServiceValidator))
	if len(failed) != 1 {
		t.Fatalf("step_failed events: got %d, want 1", len(failed))
	}
	env, err := contracts.Open(failed[0])
	if err != nil {
		t.Fatalf("the step_failed event breaks the contract: %v", err)
	}
	if err := env.ValidatePayload(); err != nil {
		t.Errorf("step_failed payload: %v", err)
	}
	sf := env.Payload.(*contracts.StepFailed)
	if sf.Code != contracts.CodeRetriesExhausted || sf.Step != contracts.StateValidating || !sf.Retryable {
		t.Errorf("step_failed: code %q step %q retryable %v; want retries_exhausted, VALIDATING, true", sf.Code, sf.Step, sf.Retryable)
	}
	if sf.PRID != "acme/widgets#1" || env.Meta.CorrelationID != "req-1" || env.Meta.CausationID != "req-1" {
		t.Errorf("step_failed: pr %q correlation %q causation %q; want acme/widgets#1, req-1, req-1", sf.PRID, env.Meta.CorrelationID, env.Meta.CausationID)
	}
	if failed[0].Source() != "/prsaga/validator" {
		t.Errorf("step_failed source: got %q, want /prsaga/validator", failed[0].Source())
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1 (the last delivery skips it)", n)
	}
	if n := h.committedEffects("req-1"); n != 0 {
		t.Errorf("committed effects: got %d, want 0", n)
	}
	if !h.processed("req-1") {
		t.Error("no inbox row for the given-up event")
	}
	if n := len(h.outgoing(contracts.SubjectMergeValidated)); n != 0 {
		t.Errorf("validated events: got %d, want 0", n)
	}
}

func TestStopLetsHandlersInProgressFinish(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var ctxErr atomic.Value
	var once sync.Once
	h := start(t, setup{effect: func(ctx context.Context, env contracts.Envelope) error {
		once.Do(func() { close(entered) })
		select {
		case <-release:
		case <-ctx.Done():
			ctxErr.Store(ctx.Err())
		}
		return nil
	}})
	h.publish(requested(t, "req-1", validRequest()))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not entered within 10s")
	}
	subs := h.b.NC.NumSubscriptions()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.r.Stop()
	}()
	// Stop has stopped consuming once its pull subscription is gone; the
	// handler in progress must still be allowed to finish and commit.
	h.waitFor("the runner to stop consuming", func() bool { return h.b.NC.NumSubscriptions() < subs })
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return within 10s of the handler finishing")
	}
	if err := ctxErr.Load(); err != nil {
		t.Errorf("the handler's context was cancelled by Stop: %v", err)
	}
	if n := h.committedEffects("req-1"); n != 1 {
		t.Errorf("committed effects of the handler in progress at Stop: got %d, want 1", n)
	}
	h.r.Stop() // a second Stop (t.Cleanup's) must be harmless
}

// Handling is never canceled (Stop lets it finish), so its context must
// not be cancelable either: SQLite and database/sql start a watcher
// goroutine per statement and per transaction for a context that is.
func TestHandlingContextIsNotCancelable(t *testing.T) {
	var cancelable atomic.Bool
	h := start(t, setup{effect: func(ctx context.Context, env contracts.Envelope) error {
		if ctx.Done() != nil {
			cancelable.Store(true)
		}
		return nil
	}})
	h.settled(h.publish(requested(t, "req-ctx", validRequest())))
	h.checkOnce("req-ctx")
	if cancelable.Load() {
		t.Error("the handler got a cancelable context")
	}
}

// A consumer that meets a version of an event type it does not know (a
// newer service publishing prsaga.merge.validated.v2 during a rolling
// upgrade, docs/operating.md "Event versions") dead-letters it with a
// reason naming the type: not a crash, not a loss, not a retry loop; the
// known version on the same subject is handled as before.
func TestUnknownEventVersionIsDeadLettered(t *testing.T) {
	h := startMerger(t)
	req := requested(t, "req-1", validRequest())
	validator := contracts.Source(contracts.ServiceValidator)
	const v2 = "prsaga.merge.validated.v2"
	newer := validatedOf(t, req, "val-v2", validator)
	newer.SetType(v2)
	h.publishOn(contracts.SubjectMergeValidated, newer)
	h.settled(h.publish(validatedOf(t, req, "val-v1", validator)))

	dlq := h.deadLettered(1) // the v2 event
	if r := dlq[0].Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, v2) {
		t.Errorf("DLQ reason %q does not name the unknown type %s", r, v2)
	}
	checkCopyOf(t, dlq[0], "val-v2")
	if n := h.committedEffects("val-v1"); n != 1 {
		t.Errorf("committed effects of the v1 event: got %d, want 1", n)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler runs: got %d, want 1 (never for the v2 event)", n)
	}
}

// An event published on another step's subject (a foreign or buggy
// publisher) is dead-lettered with a reason naming its type and subject,
// instead of reaching a handler that would refuse it on every delivery
// until the step gave up.
func TestEventOnAnotherSubjectIsDeadLettered(t *testing.T) {
	h := startMerger(t)
	req := requested(t, "req-1", validRequest())
	merged, err := contracts.New("merged-1", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), "acme/widgets#1", time.Now(),
		contracts.Merged{Request: validRequest(), MergeSHA: strings.Repeat("c", 40)},
		contracts.Meta{CorrelationID: req.ID(), CausationID: req.ID(), Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.settled(h.publishOn(contracts.SubjectMergeValidated, merged))
	dlq := h.deadLettered(1)
	if r := dlq[0].Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, contracts.TypeMerged) || !strings.Contains(r, contracts.SubjectMergeValidated) {
		t.Errorf("DLQ reason %q does not name the type and the subject", r)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler runs: got %d, want 0", n)
	}
}

// startMerger runs the merger's step under test: validated in, merged out.
func startMerger(t *testing.T) *harness {
	t.Helper()
	return start(t, setup{
		durable: contracts.ConsumerMerger,
		subject: contracts.SubjectMergeValidated,
		out: func(env contracts.Envelope) (*event.Event, error) {
			return contracts.Follow(env.Event, step.NewID(), contracts.TypeMerged, contracts.ServiceMerger, time.Now(),
				contracts.Merged{Request: env.Req(), MergeSHA: strings.Repeat("c", 40)})
		},
	})
}

// validatedOf is the validated event id from source answering req.
func validatedOf(t *testing.T, req *event.Event, id, source string) *event.Event {
	t.Helper()
	e, err := contracts.New(id, contracts.TypeMergeValidated, source, "acme/widgets#1", time.Now(),
		contracts.Validated{Request: validRequest()},
		contracts.Meta{CorrelationID: req.ID(), CausationID: req.ID(), Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A commit waiting for the database's write lock, held by another process
// for longer than AckWait, keeps its message in progress: JetStream does
// not deliver it again (a copy on another instance could commit first and
// report this run's effect as an earlier one's).
func TestCommitWaitingForTheWriteLockIsNotRedelivered(t *testing.T) {
	const ackWait = 400 * time.Millisecond
	path := filepath.Join(t.TempDir(), "shared.sqlite")
	h := start(t, setup{bus: bus.Config{AckWait: ackWait}, dbPath: path})
	other := sqlitetest.OpenFile(t, path, effects)

	locked, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- other.Update(h.ctx(), func(stx store.Tx) error {
			if _, err := stx.(*sqlite.Tx).Exec(`INSERT INTO effects (event_id) VALUES ('other-process')`); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	seq := h.publish(requested(t, "req-1", validRequest()))
	h.waitFor("the handler to run and its commit to wait for the lock", func() bool { return h.calls.Load() == 1 })
	// The other process keeps the lock for several AckWaits: a slow disk or
	// a long transaction there, which the commit rides out.
	<-time.After(4 * ackWait)
	close(release)
	if err := <-holder; err != nil {
		t.Fatalf("the other process's transaction: %v", err)
	}
	info := h.settled(seq)
	h.checkOnce("req-1")
	if info.Delivered.Consumer != 1 || info.NumRedelivered != 0 {
		t.Errorf("deliveries: %d (%d redelivered), want 1 (0): the message was not kept in progress while its commit waited",
			info.Delivered.Consumer, info.NumRedelivered)
	}
}
