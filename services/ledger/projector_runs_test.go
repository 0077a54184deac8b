package ledger_test

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// TestProjectSecondRunOutOfOrder is issue 14's item 1 as reported: run A
// fails at VALIDATING; run B's outcome is projected before B's request (a
// Nak, or another ledger). The row must end with B's true outcome, never
// restart B at VALIDATING.
func TestProjectSecondRunOutOfOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     func(b *run) []*event.Event // B's events but its request
		state contracts.State
		step  contracts.State
		err   string
	}{
		{"checks failed", func(b *run) []*event.Event {
			return []*event.Event{b.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed)}
		}, contracts.StateMergeFailed, contracts.StateValidating, "checks_failed: it broke"},
		{"conflict", func(b *run) []*event.Event {
			return []*event.Event{b.validated(), b.failed(contracts.StateMerging, contracts.ServiceMerger, contracts.CodeConflict)}
		}, contracts.StateMergeFailed, contracts.StateMerging, "conflict: it broke"},
		{"merged", func(b *run) []*event.Event {
			return []*event.Event{b.validated(), b.merged(), b.notified(), b.indexed()}
		}, contracts.StateMerged, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			a := newRun(t, pr)
			f.project(a.ev)
			f.project(a.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed))
			b := newRun(t, pr)
			for _, e := range tc.b(b) {
				f.project(e)
			}
			f.project(b.ev)
			s := f.saga(pr)
			if s.CorrelationID != b.ev.ID() || s.State != tc.state || s.FailedStep != tc.step || s.LastError != tc.err {
				t.Fatalf("row %+v (history %s); want run %s %s at %q, %q", s, path(s.Transitions), b.ev.ID(), tc.state, tc.step, tc.err)
			}
			// And A's request, redelivered late, changes nothing.
			f.project(a.ev)
			if again := f.saga(pr); again.CorrelationID != b.ev.ID() || again.State != tc.state {
				t.Fatalf("after run A's late events: %+v, want run B's row kept", again)
			}
		})
	}
}

// A request refused at the validator's gate (in_progress) never takes the
// row of the run that holds the PR, whichever arrives first.
func TestProjectRefusedRunNeverTakesTheRow(t *testing.T) {
	f := newFixture(t)
	a := newRun(t, pr)
	b := newRun(t, pr)
	refused := b.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeInProgress)
	for _, e := range []*event.Event{a.ev, a.failed(contracts.StateMerging, contracts.ServiceMerger, contracts.CodeConflict), b.ev, refused} {
		f.project(e)
	}
	s := f.saga(pr)
	if s.CorrelationID != a.ev.ID() || s.FailedStep != contracts.StateMerging {
		t.Fatalf("row %+v (history %s); want run A's failure at MERGING kept", s, path(s.Transitions))
	}
}

// A client cannot backdate its way ahead of another run: runs are ordered
// by when the stream stored their requests, not by the requests' time
// attribute. Run B's request says it was made an hour before run A's, but
// the stream stored it after A's: B is the later run and keeps the row
// once both failed before the merge.
func TestRunsOrderedByTheStreamNotTheClientsTime(t *testing.T) {
	f := newFixture(t)
	a := newRun(t, pr)
	b := newRun(t, pr)
	backdated, err := contracts.NewRequested(b.ev.ID(), "https://forge.test/acme", time.Now().Add(-time.Hour), b.req, "")
	if err != nil {
		t.Fatal(err)
	}
	b.ev = backdated
	stored := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	for i, e := range []*event.Event{a.ev, a.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed),
		b.ev, b.failed(contracts.StateValidating, contracts.ServiceValidator, contracts.CodeChecksFailed)} {
		if _, err := f.tryProjectStored(f.store, e, stored.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.saga(pr); s.CorrelationID != b.ev.ID() || s.State != contracts.StateMergeFailed {
		t.Fatalf("row of run %s (%s), want the run stored last, %s, MERGE_FAILED (run %s claims an earlier time)", s.CorrelationID, s.State, b.ev.ID(), b.ev.ID())
	}
}
