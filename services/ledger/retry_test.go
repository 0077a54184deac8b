package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
)

func (f *fixture) retrier(store *ledger.Store) *ledger.Retrier {
	return &ledger.Retrier{Store: store, Proj: f.proj, NewID: step.NewID, Log: f.log}
}

func (f *fixture) retry(req ledger.RetryRequest) ledger.RetryAnswer {
	f.t.Helper()
	ans, err := f.retrier(f.store).Retry(context.Background(), req)
	if err != nil {
		f.t.Fatalf("retry %+v: %v", req, err)
	}
	return ans
}

// outboxOf decodes every unsent outbox row on subject.
func (f *fixture) outboxOf(db *psqlite.DB, subject string) []contracts.Envelope {
	f.t.Helper()
	return emitted.On(f.t, db, subject)
}

func TestRetryReplaysTheFailedStepsTrigger(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	m := r.merged()
	for _, e := range []*event.Event{r.ev, r.validated(), m, r.failed(contracts.StateNotifying, contracts.ServiceNotifier, contracts.CodeWebhookFailed)} {
		f.project(e)
	}
	ans := f.retry(ledger.RetryRequest{PRID: pr, Actor: "operator"})
	if !ans.Accepted || ans.Replay == nil {
		t.Fatalf("answer %+v, want accepted", ans)
	}
	rp := ans.Replay
	if rp.Step != contracts.StateNotifying || rp.Attempt != 2 || rp.ReplayOf != m.ID() || rp.EventType != contracts.TypeMerged ||
		rp.CorrelationID != r.ev.ID() || rp.EventID == m.ID() || rp.Actor != "operator" {
		t.Fatalf("replay %+v: want merged %s replayed as attempt 2 of run %s", rp, m.ID(), r.ev.ID())
	}

	s := f.saga(pr)
	if s.State != contracts.StateNotifying || s.Attempts != 2 || s.FailedStep != "" || s.LastError != "" || !s.Merged {
		t.Fatalf("saga %+v, want NOTIFYING at attempt 2, still merged", s)
	}
	last := s.Transitions[len(s.Transitions)-1]
	if last.From != contracts.StateMergeFailed || last.To != contracts.StateNotifying || last.Actor != "operator" || last.EventID != rp.EventID {
		t.Fatalf("last transition %+v, want MERGE_FAILED -> NOTIFYING by operator, event %s", last, rp.EventID)
	}

	replays := f.outboxOf(f.db, contracts.ReplaySubject(contracts.TypeMerged))
	if len(replays) != 1 {
		t.Fatalf("%d merged events in the outbox, want the one replay", len(replays))
	}
	got := replays[0]
	if got.Event.ID() != rp.EventID || got.Event.Source() != contracts.SourceLedger || got.Meta.ReplayOf != m.ID() ||
		got.Meta.Attempt != 2 || got.Meta.CorrelationID != r.ev.ID() || string(got.Event.Data()) != string(m.Data()) {
		t.Fatalf("replayed event %+v (meta %+v), want a copy of %s from the ledger, attempt 2", got.Event, got.Meta, m.ID())
	}
	sc := f.outboxOf(f.db, contracts.SubjectStateChanged)
	lastSC := sc[len(sc)-1].Payload.(*contracts.StateChanged)
	if lastSC.FromState != contracts.StateMergeFailed || lastSC.ToState != contracts.StateNotifying || !lastSC.Merged {
		t.Fatalf("last state_changed %+v, want the retry's", lastSC)
	}

	// The ledger later consumes its own replay: recorded, not applied.
	res := f.project(got.Event)
	if res.Status != ledger.StatusIgnored || !strings.Contains(res.Reason, "replay of "+m.ID()) {
		t.Fatalf("own replay projected as %+v, want ignored as a replay", res)
	}

	// A second failure and a second retry replay the *original* again.
	f.project(r.follow(got.Event, contracts.TypeStepFailed, contracts.ServiceNotifier,
		contracts.StepFailed{Request: r.req, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: "still down", Retryable: true}))
	ans = f.retry(ledger.RetryRequest{PRID: pr, Actor: "local"})
	if !ans.Accepted || ans.Replay.ReplayOf != m.ID() || ans.Replay.Attempt != 3 {
		t.Fatalf("second retry %+v, want a replay of %s at attempt 3", ans.Replay, m.ID())
	}
}

func TestRetryRefusals(t *testing.T) {
	f := newFixture(t)
	if _, err := f.retrier(f.store).Retry(context.Background(), ledger.RetryRequest{PRID: pr}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown PR: %v, want ErrNotFound", err)
	}
	r := newRun(t, pr)
	f.project(r.ev)
	if ans := f.retry(ledger.RetryRequest{PRID: pr}); ans.Accepted || !strings.Contains(ans.Refused, "not MERGE_FAILED") {
		t.Fatalf("in-flight saga: %+v, want refused as not MERGE_FAILED", ans)
	}
	f.project(r.follow(r.ev, contracts.TypeStepFailed, contracts.ServiceValidator,
		contracts.StepFailed{Request: r.req, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "ci is red", Retryable: false}))
	ans := f.retry(ledger.RetryRequest{PRID: pr})
	if ans.Accepted || !ans.NeedsForce || !strings.Contains(ans.Refused, "force") {
		t.Fatalf("not retryable without force: %+v, want refused, needs force", ans)
	}
	dry := f.retry(ledger.RetryRequest{PRID: pr, Force: true, DryRun: true})
	if !dry.Accepted || !dry.DryRun || dry.Replay.EventType != contracts.TypeMergeRequested || dry.Replay.ReplayOf != r.ev.ID() {
		t.Fatalf("dry run %+v, want the requested event replayed", dry)
	}
	if s := f.saga(pr); s.State != contracts.StateMergeFailed || s.Attempts != 1 || len(f.outboxOf(f.db, contracts.ReplaySubject(contracts.TypeMergeRequested))) != 0 {
		t.Fatalf("a dry run wrote: saga %+v", s)
	}
	if ans := f.retry(ledger.RetryRequest{PRID: pr, Force: true}); !ans.Accepted {
		t.Fatalf("forced retry: %+v", ans)
	}
	reqs := f.outboxOf(f.db, contracts.ReplaySubject(contracts.TypeMergeRequested))
	if len(reqs) != 1 || reqs[0].Meta.CorrelationID != r.ev.ID() || reqs[0].Event.ID() == r.ev.ID() {
		t.Fatalf("replayed requests %+v: want one, of run %s, with a new id", reqs, r.ev.ID())
	}
}

func TestRetryIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	r := newRun(t, pr)
	f.project(r.ev)
	f.project(r.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksPending))
	first := f.retry(ledger.RetryRequest{PRID: pr, IdempotencyKey: "k-1"})
	again := f.retry(ledger.RetryRequest{PRID: pr, IdempotencyKey: "k-1"})
	if !first.Accepted || !again.Accepted || !again.Repeated || again.Replay.EventID != first.Replay.EventID {
		t.Fatalf("first %+v, again %+v: want the first answer again", first, again)
	}
	other := f.retry(ledger.RetryRequest{PRID: pr, IdempotencyKey: "k-2"})
	if other.Accepted || other.Repeated {
		t.Fatalf("a new key on a retried saga: %+v, want refused", other)
	}
	if again := f.retry(ledger.RetryRequest{PRID: pr, IdempotencyKey: "k-2"}); again.Accepted || !again.Repeated || again.Refused != other.Refused {
		t.Fatalf("a refusal is the first answer too: %+v", again)
	}
	if n := len(f.outboxOf(f.db, contracts.ReplaySubject(contracts.TypeMergeRequested))); n != 1 {
		t.Fatalf("%d replays, want 1", n)
	}
	_, err := f.retrier(f.store).Retry(context.Background(), ledger.RetryRequest{PRID: "acme/widgets#2", IdempotencyKey: "k-1"})
	if !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("key of another PR: %v, want ErrKeyReused", err)
	}
}

// Two ledgers (two handles on one database file) retry at once: one
// replay, one refusal.
func TestRetryConcurrent(t *testing.T) {
	f := newFixture(t)
	dbA, a, b := twoLedgers(t)
	f.store = a
	r := newRun(t, pr)
	f.project(r.ev)
	f.project(r.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksPending))

	answers, errs := atOnce([]*ledger.Store{a, b}, func(s *ledger.Store) (ledger.RetryAnswer, error) {
		return f.retrier(s).Retry(context.Background(), ledger.RetryRequest{PRID: pr, Actor: "local"})
	})
	accepted := 0
	for i, ans := range answers {
		if errs[i] != nil {
			t.Fatalf("ledger %d: %v", i, errs[i])
		}
		if ans.Accepted {
			accepted++
		}
	}
	if accepted != 1 {
		t.Fatalf("answers %+v: want one accepted, one refused", answers)
	}
	if n := len(f.outboxOf(dbA, contracts.ReplaySubject(contracts.TypeMergeRequested))); n != 1 {
		t.Fatalf("%d replays in the outbox, want 1", n)
	}
}
