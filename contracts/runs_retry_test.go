package contracts_test

import (
	"testing"

	"github.com/prsaga/prsaga/contracts"
)

// TestDeriveKeepsRetryAcrossTakeBack is the property test's seed
// 1796142019653526610 (services/ledger) reduced: run C merged, failed at
// INDEXING and was retried (attempt 2, failed again) while run B's retry
// was still in flight; B's late events took the row back (B's requests
// come first), then B's failure gave it to C again, folded from C's
// recorded events — which did not hold C's retry yet, its replay being
// still on the bus. The replay delivered last must restore the retry:
// attempt 2, as in any other order.
func TestDeriveKeepsRetryAcrossTakeBack(t *testing.T) {
	const V, M, I = contracts.StateValidating, contracts.StateMerging, contracts.StateIndexing
	bReq := ev("B", contracts.TypeMergeRequested, "B", 1, 10, "", "")
	bTimeout := ev("bt", contracts.TypeTimedOut, "B", 1, 11, V, "")
	bTimeout.Error = "timed_out: stuck"
	bReplay := ev("br", contracts.TypeMergeRequested, "B", 2, 12, "", "")
	bReplay.ReplayOf = "B"
	bVal2 := ev("bv2", contracts.TypeMergeValidated, "B", 2, 13, "", "")
	bFail2 := ev("bf2", contracts.TypeStepFailed, "B", 2, 14, M, contracts.CodeConflict)
	cReq := ev("C", contracts.TypeMergeRequested, "C", 1, 20, "", "")
	cVal := ev("cv", contracts.TypeMergeValidated, "C", 1, 21, "", "")
	cMerged := ev("cm", contracts.TypeMerged, "C", 1, 22, "", "")
	cMerged.MergeSHA = "3333333333333333333333333333333333333333"
	cNotified := ev("cn", contracts.TypeNotified, "C", 1, 23, "", "")
	cFail := ev("cf", contracts.TypeStepFailed, "C", 1, 24, I, contracts.CodeIndexError)
	cReplay := ev("cr", contracts.TypeNotified, "C", 2, 25, "", "")
	cReplay.ReplayOf = "cn"
	cFail2 := ev("cf2", contracts.TypeStepFailed, "C", 2, 26, I, contracts.CodeIndexError)

	// retry is the operator's retry of the row's run: the row moves, the
	// replay is published (delivered later, as listed).
	retry := contracts.Incoming{Type: "retry"}
	steps := []contracts.Incoming{bReq, bTimeout, retry, bReplay, cReq, cVal, cMerged, cNotified, cFail, retry, cFail2, bVal2, bFail2, cReplay}

	var row contracts.Row
	var seen []contracts.Incoming
	for _, in := range steps {
		if in.Type == "retry" {
			d, err := contracts.Retry(row)
			if err != nil {
				t.Fatalf("retry of %+v: %v", row, err)
			}
			row = d.Row
			continue
		}
		seen = append(seen, in)
		d, _ := contracts.Project(row, in, func() ([]contracts.Incoming, error) { return seen, nil })
		if d.Applied() {
			row = d.Row
		}
	}
	if row.CorrelationID != "C" || row.State != contracts.StateMergeFailed || row.FailedStep != I || row.Attempts != 2 || !row.Merged {
		t.Fatalf("row %+v; want run C MERGE_FAILED at INDEXING, merged, attempt 2", row)
	}
	// The same events folded at once give the same row.
	if r := contracts.Derive(contracts.Row{}, seen); !contracts.SameOutcome(r, row) {
		t.Fatalf("derived from the set %+v; projected %+v", r, row)
	}
}
