package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/validator"
)

// TestLockFollowsRetryAtMerging is issue 14's item 3 through the
// validator's real consumers: the merge of run A times out (attempt 1), the
// operator retries at MERGING — the ledger replays validated at attempt 2,
// which never passes the validator's decision — and then the slow merger's
// step_failed(MERGING) of attempt 1 arrives. The lock must stay with
// attempt 2, which is merging: a new request is refused, until attempt 2's
// own failure releases the lock.
func TestLockFollowsRetryAtMerging(t *testing.T) {
	h, req := startGreenPR(t, 84, "feature/slow", "slow")

	a := h.send(req)
	va := h.out.validated(a)
	h.follow(contracts.TypeTimedOut, contracts.ServiceLedger, 84, a, 1,
		contracts.TimedOut{Request: req, Step: contracts.StateMerging, Deadline: time.Now(), LastEventID: a, Diagnosis: "slow"})

	// The retry at MERGING: the ledger replays the validated event.
	replay, err := contracts.New(step.NewID(), contracts.TypeMergeValidated, contracts.SourceLedger, req.PRID, time.Now(), va,
		contracts.Meta{CorrelationID: a, CausationID: a, Attempt: 2, ReplayOf: h.out.answer(a).Event.ID()})
	if err != nil {
		t.Fatal(err)
	}
	h.publish(replay)
	// Attempt 1's merger gives up late, while attempt 2 merges.
	late := h.follow(contracts.TypeStepFailed, contracts.ServiceMerger, 84, a, 1,
		contracts.StepFailed{Request: req, Step: contracts.StateMerging, Code: contracts.CodeRetriesExhausted, Reason: "late"})
	h.waitProcessed(late.ID())
	h.waitLock(84, "held by attempt 2 after attempt 1's late failure", func(l validator.Lock) bool { return l == validator.Lock{Holder: a, Attempt: 2} })
	b := h.send(req)
	if f := h.out.failed(b, contracts.CodeInProgress); !strings.Contains(f.Reason, a) {
		t.Errorf("in_progress reason %q does not name the holder %s", f.Reason, a)
	}

	// Attempt 2 fails for real: released, and a new run validates.
	c := h.conflictThenNewRun(req, a, 2)
	// A's replay of attempt 2, redelivered now, does not take the lock back.
	h.publish(replay) // same id: JetStream's dedupe or the inbox drops it
	again, err := contracts.New(step.NewID(), contracts.TypeMergeValidated, contracts.SourceLedger, req.PRID, time.Now(), va,
		contracts.Meta{CorrelationID: a, CausationID: a, Attempt: 2, ReplayOf: h.out.answer(a).Event.ID()})
	if err != nil {
		t.Fatal(err)
	}
	h.publish(again)
	h.waitProcessed(again.ID())
	if l := h.lock(84); l != (validator.Lock{Holder: c, Attempt: 1}) {
		t.Fatalf("lock after a stale replay = %+v; want still held by %s", l, c)
	}
}
