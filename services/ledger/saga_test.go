package ledger_test

import (
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// A saga has stopped in MERGED and MERGE_FAILED only; a saga not read
// (no state) has not.
func TestSagaTerminal(t *testing.T) {
	for st, want := range map[contracts.State]bool{
		contracts.StateValidating: false, contracts.StateMerging: false, contracts.StateNotifying: false,
		contracts.StateIndexing: false, contracts.StateMerged: true, contracts.StateMergeFailed: true, "": false,
	} {
		if got := (ledger.Saga{State: st}).Terminal(); got != want {
			t.Errorf("Saga{State: %q}.Terminal() = %v, want %v", st, got, want)
		}
	}
}
