package contracts_test

import (
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// ev is an Incoming of run at t0+sec seconds.
func ev(id, typ, run string, attempt, sec int, step contracts.State, code string) contracts.Incoming {
	in := contracts.Incoming{ID: id, Type: typ, CorrelationID: run, Attempt: attempt, Req: validRequest(),
		Time: time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC), Step: step, Code: code}
	if code != "" {
		in.Error = code + ": r"
	}
	return in
}

// fold projects evs one by one as the ledger does: Decide, then Derive
// when the row may change runs.
func fold(evs []contracts.Incoming) contracts.Row {
	var row contracts.Row
	var seen []contracts.Incoming
	for _, in := range evs {
		seen = append(seen, in)
		d, _ := contracts.Project(row, in, func() ([]contracts.Incoming, error) { return seen, nil })
		if d.Applied() {
			row = d.Row
		}
	}
	return row
}

func TestDeriveAcrossRuns(t *testing.T) {
	const V, M = contracts.StateValidating, contracts.StateMerging
	aReq := ev("A", contracts.TypeMergeRequested, "A", 1, 0, "", "")
	aFail := ev("a1", contracts.TypeStepFailed, "A", 1, 1, V, contracts.CodeChecksFailed)
	bReq := ev("B", contracts.TypeMergeRequested, "B", 1, 10, "", "")
	bVal := ev("b1", contracts.TypeMergeValidated, "B", 1, 11, "", "")
	bFail := ev("b2", contracts.TypeStepFailed, "B", 1, 12, M, contracts.CodeConflict)
	cReq := ev("C", contracts.TypeMergeRequested, "C", 1, 5, "", "")
	cRefused := ev("c1", contracts.TypeStepFailed, "C", 1, 6, V, contracts.CodeInProgress)
	for _, tc := range []struct {
		name string
		evs  []contracts.Incoming
		run  string
		st   contracts.State
		step contracts.State
	}{
		{"in order", []contracts.Incoming{aReq, aFail, bReq, bVal, bFail}, "B", contracts.StateMergeFailed, M},
		{"B's outcome before its request", []contracts.Incoming{aReq, aFail, bFail, bVal, bReq}, "B", contracts.StateMergeFailed, M},
		{"B first, A's request late", []contracts.Incoming{bReq, bVal, bFail, aReq, aFail}, "B", contracts.StateMergeFailed, M},
		{"A's failure last", []contracts.Incoming{aReq, bReq, bFail, bVal, aFail}, "B", contracts.StateMergeFailed, M},
		{"refused run first", []contracts.Incoming{cReq, cRefused, aReq, aFail}, "A", contracts.StateMergeFailed, V},
		{"refused run between", []contracts.Incoming{aReq, aFail, cReq, cRefused}, "A", contracts.StateMergeFailed, V},
		{"refused run before its refusal", []contracts.Incoming{aReq, aFail, cReq}, "C", contracts.StateValidating, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fold(tc.evs)
			if r.CorrelationID != tc.run || r.State != tc.st || r.FailedStep != tc.step {
				t.Fatalf("row %+v; want run %s %s at %q", r, tc.run, tc.st, tc.step)
			}
		})
	}
}

// A replay stands for the retry that sent it: folded from the events
// alone, a run that timed out at MERGING and was retried is at attempt 2.
func TestFoldRunReplay(t *testing.T) {
	evs := []contracts.Incoming{
		ev("A", contracts.TypeMergeRequested, "A", 1, 0, "", ""),
		ev("v1", contracts.TypeMergeValidated, "A", 1, 1, "", ""),
		ev("t1", contracts.TypeTimedOut, "A", 1, 2, contracts.StateMerging, ""),
		ev("v2", contracts.TypeMergeValidated, "A", 2, 3, "", ""),
	}
	evs[2].Error = "timed_out: slow"
	evs[3].ReplayOf = "v1"
	r := contracts.FoldRun(evs)
	if r.State != contracts.StateMerging || r.Attempts != 2 || r.TimedOut {
		t.Fatalf("fold %+v; want MERGING at attempt 2", r)
	}
	f := ev("f2", contracts.TypeStepFailed, "A", 2, 4, contracts.StateMerging, contracts.CodeConflict)
	if r := contracts.FoldRun(append(evs, f)); r.State != contracts.StateMergeFailed || r.FailedStep != contracts.StateMerging || r.Attempts != 2 {
		t.Fatalf("fold with attempt 2's failure %+v; want MERGE_FAILED at MERGING, attempt 2", r)
	}
}
