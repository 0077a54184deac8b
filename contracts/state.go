package contracts

// State is a saga state of the ledger's pr_saga row.
type State string

// Saga states (design §4).
const (
	StateValidating  State = "VALIDATING"
	StateMerging     State = "MERGING"
	StateNotifying   State = "NOTIFYING"
	StateIndexing    State = "INDEXING"
	StateMerged      State = "MERGED"
	StateMergeFailed State = "MERGE_FAILED"
)

// States lists every state, in-flight ones in step order.
var States = []State{StateValidating, StateMerging, StateNotifying, StateIndexing, StateMerged, StateMergeFailed}

// Steps lists the in-flight states in saga order.
var Steps = []State{StateValidating, StateMerging, StateNotifying, StateIndexing}

// InFlight reports whether s is one of the four step states.
func (s State) InFlight() bool {
	switch s {
	case StateValidating, StateMerging, StateNotifying, StateIndexing:
		return true
	}
	return false
}

// ParseState checks a state name.
func ParseState(s string) (State, error) {
	for _, st := range States {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fieldErr("state", "%q is not one of VALIDATING, MERGING, NOTIFYING, INDEXING, MERGED, MERGE_FAILED", truncate(s))
}

// next is the state a successful step leads to.
var next = map[State]State{StateValidating: StateMerging, StateMerging: StateNotifying, StateNotifying: StateIndexing, StateIndexing: StateMerged}

// TriggerType is the event type that starts a step: what a retry replays.
func TriggerType(step State) string {
	switch step {
	case StateValidating:
		return TypeMergeRequested
	case StateMerging:
		return TypeMergeValidated
	case StateNotifying:
		return TypeMerged
	case StateIndexing:
		return TypeNotified
	}
	return ""
}

// rank orders the outcomes of a run:
// VALIDATING < failed(VALIDATING) < MERGING < failed(MERGING) < … < MERGED.
func rank(s, failedStep State) int {
	switch s {
	case StateValidating:
		return 0
	case StateMerging:
		return 2
	case StateNotifying:
		return 4
	case StateIndexing:
		return 6
	case StateMerged:
		return 8
	case StateMergeFailed:
		return rank(failedStep, "") + 1
	}
	return -1
}
