package contracts

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Runs of one PR, and which of them owns the row (design §4 "Runs").
//
// Decide moves a row event by event. Within a run that is enough: outcomes
// are ranked, so the run's row is the same for any delivery order. Across
// runs it is not: an event of run B delivered while the row still belongs to
// run A is recorded but not applied, and B's requested event delivered after
// B's own failure would restart B at VALIDATING. Derive settles the row from
// the set of recorded events instead, so that the answer does not depend on
// the order they came in:
//
//   - Runs are ordered by their requested event: when the bus stored it
//     (Incoming.Time, never the client's time attribute), then its id (the
//     correlation id). A run whose requested event has not been
//     recorded yet is placed at the earliest time among its recorded events
//     (they all come after its request), until the request arrives.
//   - A run refused at the validator's gate — its first attempt failed at
//     VALIDATING with in_progress, already_merged or invalid_request — never
//     held the PR's lock: it owns the row only while no other run has one.
//   - Walking the runs in that order, a run takes the row over when the row
//     has no run yet, when the row's run was refused, when the row's run
//     stopped before the merge by a step's own failure (MERGE_FAILED by a
//     step_failed at VALIDATING or MERGING: the lock was released; a
//     timed-out step may still be working), or when the run was validated
//     and the row has not passed VALIDATING (the validator's lock chose it).
//     Otherwise its events stay recorded, never applied.
//   - The run that owns the row is folded from its own recorded events —
//     the ones delivered while the row belonged to another run included —
//     in a canonical order (attempt, then the request, the ledger's replays,
//     then outcomes by rank), a replay of a step's trigger standing for the
//     operator's retry that sent it. For the run the row already belongs to,
//     the row itself is its fold: it also holds retries whose replays have
//     not been delivered yet — unless a recorded replay of the run is at an
//     attempt above the row's. Then the row was folded when the run took it
//     back from another run, before that replay was recorded, and lost the
//     retry: the run is folded again, the replay standing for the retry.

// Derive returns the row the recorded events of one PR lead to, given cur,
// the row as stored (its run's state is taken as is). Exists is false when
// no event moves a saga. Version, CreatedAt and UpdatedAt are cur's.
func Derive(cur Row, evs []Incoming) Row {
	byRun := map[string][]Incoming{}
	var order []string
	for _, in := range evs {
		if _, ok := byRun[in.CorrelationID]; !ok {
			order = append(order, in.CorrelationID)
		}
		byRun[in.CorrelationID] = append(byRun[in.CorrelationID], in)
	}
	if cur.Exists {
		if _, ok := byRun[cur.CorrelationID]; !ok {
			order = append(order, cur.CorrelationID)
		}
	}
	keys := make(map[string]time.Time, len(order))
	for _, run := range order {
		keys[run] = runStart(run, byRun[run])
	}
	slices.SortFunc(order, func(a, b string) int {
		if c := keys[a].Compare(keys[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})

	var row Row
	rowRefused := false
	for _, run := range order {
		evs := byRun[run]
		refused := isRefused(evs)
		switch {
		case !row.Exists, rowRefused:
		case refused:
			continue
		case yields(row):
		case validatedIn(evs) && row.Rank() <= rank(StateMergeFailed, StateValidating):
		default:
			continue
		}
		next := cur
		if run != cur.CorrelationID || !cur.Exists || lacksRetry(cur, evs) {
			next = FoldRun(evs)
		}
		if !next.Exists {
			continue
		}
		row, rowRefused = next, refused
	}
	row.Version, row.CreatedAt, row.UpdatedAt = cur.Version, cur.CreatedAt, cur.UpdatedAt
	return row
}

// runStart is a run's place in the order of runs: its request's time, or
// the earliest time among its events while the request is not recorded.
func runStart(run string, evs []Incoming) time.Time {
	var earliest time.Time
	for _, in := range evs {
		if in.Type == TypeMergeRequested && in.ID == run {
			return in.Time
		}
		if earliest.IsZero() || in.Time.Before(earliest) {
			earliest = in.Time
		}
	}
	return earliest
}

// isRefused: the run's first attempt was turned away at the validator's gate
// (before or instead of taking the lock).
func isRefused(evs []Incoming) bool {
	for _, in := range evs {
		if in.Type == TypeStepFailed && in.Step == StateValidating && in.Attempt == 1 &&
			(in.Code == CodeInProgress || in.Code == CodeAlreadyMerged || in.Code == CodeInvalidRequest) {
			return true
		}
	}
	return false
}

// lacksRetry reports whether a recorded replay of the row's run stands for
// a retry the row does not hold: the row was folded (when its run took it
// back from another run) before that replay was recorded, so the row alone
// has lost the retry and the run must be folded again.
func lacksRetry(cur Row, evs []Incoming) bool {
	for _, in := range evs {
		if in.ReplayOf != "" && in.Attempt > cur.Attempts {
			return true
		}
	}
	return false
}

func validatedIn(evs []Incoming) bool {
	for _, in := range evs {
		if in.Type == TypeMergeValidated {
			return true
		}
	}
	return false
}

// yields reports whether a new run may take the row: its run stopped before
// the merge by a step's own failure.
func yields(r Row) bool {
	return r.Exists && r.State == StateMergeFailed && !r.TimedOut &&
		(r.FailedStep == StateValidating || r.FailedStep == StateMerging)
}

// FoldRun is the row of one run's events alone, folded in a canonical
// order: by attempt; within an attempt the request first, then the ledger's
// replays (a replay of a step's trigger at attempt N moves a row that failed
// at that step to it, as the retry that sent it did), then the outcomes by
// rank, then by id. Within a run Decide's result does not depend on the
// order, so any order would do; a fixed one makes the fold a function of the
// set.
func FoldRun(evs []Incoming) Row {
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b Incoming) int {
		if a.Attempt != b.Attempt {
			return a.Attempt - b.Attempt
		}
		if ca, cb := foldClass(a), foldClass(b); ca != cb {
			return ca - cb
		}
		if ra, rb := outcomeRank(a), outcomeRank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.ID, b.ID)
	})
	var row Row
	for _, in := range evs {
		if in.ReplayOf != "" && row.Exists {
			row = replayed(row, in)
			continue
		}
		if d := Decide(row, in); d.Applied() {
			row = d.Row
		}
	}
	return row
}

func foldClass(in Incoming) int {
	switch {
	case in.Type == TypeMergeRequested && in.ReplayOf == "":
		return 0
	case in.ReplayOf != "":
		return 1
	}
	return 2
}

// outcomeRank ranks an event by the outcome it stands for.
func outcomeRank(in Incoming) int {
	switch in.Type {
	case TypeMergeValidated:
		return rank(StateMerging, "")
	case TypeMerged:
		return rank(StateNotifying, "")
	case TypeNotified:
		return rank(StateIndexing, "")
	case TypeIndexed:
		return rank(StateMerged, "")
	case TypeStepFailed, TypeTimedOut:
		return rank(StateMergeFailed, in.Step)
	}
	return -1
}

// replayed applies the ledger's replay of a step's trigger: the retry that
// sent it moved the row from MERGE_FAILED at that step back to the step, at
// the replay's attempt. When the row has moved on since (a late success
// healed it), the replay only raises the attempts, as the retry did.
func replayed(row Row, in Incoming) Row {
	step := stepTriggeredBy(in.Type)
	if row.State == StateMergeFailed && row.FailedStep == step && in.Attempt > row.Attempts {
		row.State, row.FailedStep, row.LastError, row.TimedOut = step, "", "", false
	}
	if in.Attempt > row.Attempts {
		row.Attempts = in.Attempt
	}
	return row
}

func stepTriggeredBy(eventType string) State {
	for _, s := range Steps {
		if TriggerType(s) == eventType {
			return s
		}
	}
	return ""
}

// Rederived is the decision that moves cur to the derived row to when an
// event made Derive disagree with Decide: one transition from where the row
// is to where its events lead (none when only fields other than the state
// and the run change), announced like any other — or, when the events keep
// the row as it is, the event ignored.
func Rederived(cur, to Row, in Incoming) Decision {
	if SameOutcome(cur, to) {
		return ignore("the PR's recorded events keep the row with run %s (%s): runs are ordered by their requests", cur.CorrelationID, describe(cur))
	}
	newRun := cur.CorrelationID != to.CorrelationID
	reason := fmt.Sprintf("%s of run %s folded with the run's recorded events", in.Type, in.CorrelationID)
	if newRun {
		reason = fmt.Sprintf("run %s takes the row over from run %s (%s; its recorded events folded in)", to.CorrelationID, cur.CorrelationID, in.Type)
	}
	d := Decision{NewRun: newRun, Row: to}
	if newRun || cur.State != to.State || cur.FailedStep != to.FailedStep {
		d.Transitions = []Transition{{From: cur.State, To: to.State, Reason: reason}}
	}
	return d
}

// SameOutcome reports whether two rows say the same about a saga (ignoring
// version and times).
func SameOutcome(a, b Row) bool {
	return a.Exists == b.Exists && a.CorrelationID == b.CorrelationID && a.State == b.State && a.FailedStep == b.FailedStep &&
		a.LastError == b.LastError && a.TimedOut == b.TimedOut && a.Attempts == b.Attempts && a.MergeSHA == b.MergeSHA && a.Merged == b.Merged
}

// MayChangeRun reports whether the row after an event (after, Decide's
// answer applied to before) may not be what the PR's recorded events lead
// to when runs are taken into account: the event is of another run than
// the row's, the row is where a run can take it over (VALIDATING, or
// MERGE_FAILED at VALIDATING or MERGING), or the event is a replay at an
// attempt above the row's (the row was folded without the retry that sent
// it). Only then must the ledger Derive.
func MayChangeRun(before, after Row, in Incoming) bool {
	if !before.Exists {
		return false
	}
	if in.CorrelationID != before.CorrelationID {
		return true
	}
	if in.ReplayOf != "" && in.Attempt > after.Attempts {
		return true
	}
	return after.State == StateValidating ||
		after.State == StateMergeFailed && (after.FailedStep == StateValidating || after.FailedStep == StateMerging)
}

// Project is the ledger's answer to one event for row: Decide, and when the
// event may change which run the row follows (MayChangeRun), Derive from
// the PR's events. The row's run keeps its incremental state (Decide's
// answer when the event is of that run); a run taking over is folded.
// events is called only then and returns every event of the PR to derive
// from, in among them.
func Project(row Row, in Incoming, events func() ([]Incoming, error)) (Decision, error) {
	d := Decide(row, in)
	after := row
	if d.Applied() {
		after = d.Row
	}
	if !MayChangeRun(row, after, in) {
		return d, nil
	}
	base := after
	if after.CorrelationID != row.CorrelationID {
		base = row
	}
	evs, err := events()
	if err != nil {
		return Decision{}, err
	}
	if derived := Derive(base, evs); !SameOutcome(after, derived) {
		return Rederived(row, derived, in), nil
	}
	return d, nil
}
