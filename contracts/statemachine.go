package contracts

import (
	"fmt"
	"time"
)

// Row is the ledger's view of one PR's saga (table pr_saga). Exists is false
// when the ledger has no row for the PR yet.
type Row struct {
	Exists        bool
	PRID          string
	Repo          string
	CorrelationID string
	State         State
	FailedStep    State
	LastError     string
	// TimedOut is true when the failure was a watchdog timeout: the step may
	// still be working, so only a retry resumes the saga.
	TimedOut  bool
	Attempts  int
	MergeSHA  string
	Merged    bool
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Rank is the row's outcome rank within its run.
func (r Row) Rank() int { return rank(r.State, r.FailedStep) }

// Incoming is what the state machine needs of an event.
type Incoming struct {
	ID            string
	Type          string
	CorrelationID string
	Attempt       int
	Req           Request
	Step          State  // step_failed / timed_out: the step that failed
	Error         string // step_failed / timed_out: "code: reason"
	MergeSHA      string // merged / notified / indexed
	// Code is a step_failed's failure code (Error starts with it).
	Code string
	// ReplayOf is set on the ledger's replay of a trigger (a retry).
	ReplayOf string
	// Time is when the bus stored the event, as its consumer observed it
	// (the ledger: JetStream's timestamp of the message). Derive orders
	// runs by it. IncomingOf leaves it zero: an event's own time attribute
	// is chosen by its producer, and a client could backdate its request to
	// outrank another run.
	Time time.Time
}

// IncomingOf extracts what the state machine needs from an opened event.
func IncomingOf(env Envelope) Incoming {
	in := Incoming{
		ID:            env.Event.ID(),
		Type:          env.Event.Type(),
		CorrelationID: env.Meta.CorrelationID,
		Attempt:       env.Meta.Attempt,
		Req:           env.Req(),
		ReplayOf:      env.Meta.ReplayOf,
	}
	switch p := env.Payload.(type) {
	case *Merged:
		in.MergeSHA = p.MergeSHA
	case *Notified:
		in.MergeSHA = p.MergeSHA
	case *Indexed:
		in.MergeSHA = p.MergeSHA
	case *StepFailed:
		in.Step, in.Error, in.Code = p.Step, p.Code+": "+p.Reason, p.Code
	case *TimedOut:
		in.Step, in.Error = p.Step, "timed_out: "+p.Diagnosis
	}
	return in
}

// Transition is one state change. Inferred transitions stand for steps
// whose own event has not been seen (yet), skipped over by a later outcome.
type Transition struct {
	From     State // "" when the row is created
	To       State
	Reason   string
	Inferred bool
}

// Decision is the state machine's answer to one event: either the
// transitions to apply and the row they lead to, or why the event is ignored.
//
// An applied decision usually has transitions, exactly one of them not
// Inferred (the event's own outcome). It has none when the event only
// completes the row without moving it: a merge sha carried by a success that
// arrived after a later step had already failed, or a step_failed that
// arrived after the watchdog timed the same step out (the step has stopped,
// so the row is no longer "timed out"). The row must still be written (same
// conditional update), but there is no transition to record or announce.
type Decision struct {
	Ignored string // non-empty: the event changes nothing, and why
	// NewRun is true when the row now belongs to a run it did not belong to
	// before: a new row, a new request, or a validated event adopting the row.
	NewRun      bool
	Transitions []Transition
	Row         Row
}

// Applied reports whether the event changes the row.
func (d Decision) Applied() bool { return d.Ignored == "" }

func ignore(format string, args ...any) Decision {
	return Decision{Ignored: fmt.Sprintf(format, args...)}
}

// Decide applies one event to the current row (design §4). It is pure: the
// ledger reads the row, calls Decide, and writes the result with one
// conditional update on (pr_id, version).
func Decide(row Row, in Incoming) Decision {
	switch in.Type {
	case TypeMergeRequested:
		return decideRequested(row, in)
	case TypeMergeValidated, TypeMerged, TypeNotified, TypeIndexed:
		return decideSuccess(row, in)
	case TypeStepFailed, TypeTimedOut:
		return decideFailure(row, in)
	}
	return ignore("event type %s does not move a saga", in.Type)
}

func decideRequested(row Row, in Incoming) Decision {
	if row.Exists {
		switch {
		case row.CorrelationID == in.CorrelationID:
			return ignore("requested event of the current run %s seen again", in.CorrelationID)
		case row.State == StateMerged:
			return ignore("the PR is already merged (run %s)", row.CorrelationID)
		case row.State != StateMergeFailed:
			return ignore("run %s is in flight (%s)", row.CorrelationID, row.State)
		case row.TimedOut:
			return ignore("run %s timed out at %s and may still be working: retry it instead", row.CorrelationID, row.FailedStep)
		case row.FailedStep != StateValidating && row.FailedStep != StateMerging:
			return ignore("run %s failed at %s after the merge: retry it instead", row.CorrelationID, row.FailedStep)
		}
	}
	to := newRow(row, in)
	to.State = StateValidating
	to.Attempts = 1
	return Decision{
		NewRun:      true,
		Transitions: []Transition{{From: fromState(row), To: StateValidating, Reason: "merge requested by " + in.Req.RequestedBy}},
		Row:         to,
	}
}

// newRow starts a run: a fresh row (keeping creation time and version of an
// existing one) that belongs to the event's run.
func newRow(row Row, in Incoming) Row {
	return Row{
		Exists:        true,
		PRID:          in.Req.PRID,
		Repo:          in.Req.Repo,
		CorrelationID: in.CorrelationID,
		Version:       row.Version,
		CreatedAt:     row.CreatedAt,
		UpdatedAt:     row.UpdatedAt,
	}
}

func fromState(row Row) State {
	if !row.Exists {
		return ""
	}
	return row.State
}

// adopt returns the row the event may act on: the existing row when the event
// belongs to its run, a new row when there is none, or a reason to ignore.
// newRun reports that the returned row belongs to a run the row was not in.
func adopt(row Row, in Incoming) (cur Row, newRun bool, why string) {
	if !row.Exists {
		r := newRow(row, in)
		r.Attempts = in.Attempt
		return r, true, ""
	}
	if row.CorrelationID == in.CorrelationID {
		return row, false, ""
	}
	// The validator's lock decides which run wins: its validated event moves a
	// row that has not passed VALIDATING to its own run. The row keeps its
	// state (VALIDATING, or MERGE_FAILED at VALIDATING) so that the recorded
	// transition starts where the row really is; the caller clears the failure.
	if in.Type == TypeMergeValidated && row.Rank() <= rank(StateMergeFailed, StateValidating) {
		r := row
		r.CorrelationID = in.CorrelationID
		r.Attempts = in.Attempt
		return r, true, ""
	}
	return Row{}, false, fmt.Sprintf("event of run %s, the row belongs to run %s", in.CorrelationID, row.CorrelationID)
}

func decideSuccess(row Row, in Incoming) Decision {
	cur, newRun, why := adopt(row, in)
	if why != "" {
		return ignore("%s", why)
	}
	target := map[string]State{TypeMergeValidated: StateMerging, TypeMerged: StateNotifying, TypeNotified: StateIndexing, TypeIndexed: StateMerged}[in.Type]
	if rank(target, "") <= cur.Rank() {
		// A failure at NOTIFYING or INDEXING carries no merge sha: when it
		// overtook the merged/notified event, that event still brings the sha,
		// or the final row would depend on delivery order.
		if cur.MergeSHA == "" && in.MergeSHA != "" {
			to := cur
			to.MergeSHA, to.Merged = in.MergeSHA, true
			return Decision{Row: to}
		}
		return ignore("outcome %s does not rank above the row's %s", target, describe(cur))
	}
	ts := path(cur, row.Exists, target, in)
	ts[len(ts)-1].Inferred = false
	ts[len(ts)-1].Reason = in.Type
	to := cur
	to.State, to.FailedStep, to.LastError, to.TimedOut = target, "", "", false
	if in.MergeSHA != "" {
		to.MergeSHA = in.MergeSHA
	}
	if rank(target, "") >= rank(StateNotifying, "") {
		to.Merged = true
	}
	if in.Attempt > to.Attempts {
		to.Attempts = in.Attempt
	}
	return Decision{NewRun: newRun, Transitions: ts, Row: to}
}

func decideFailure(row Row, in Incoming) Decision {
	if !in.Step.InFlight() {
		return ignore("failure names no step")
	}
	cur, newRun, why := adopt(row, in)
	if why != "" {
		return ignore("%s", why)
	}
	if row.Exists && in.Attempt < cur.Attempts {
		return ignore("failure of attempt %d, the row is at attempt %d", in.Attempt, cur.Attempts)
	}
	if r := rank(StateMergeFailed, in.Step); r <= cur.Rank() {
		// The watchdog's timeout says the step may still be working; the
		// step's own failure says it stopped. Recording that keeps the final
		// row independent of which came first, and agrees with the
		// validator, whose lock step_failed releases and timed_out does not.
		if in.Type == TypeStepFailed && cur.State == StateMergeFailed && cur.FailedStep == in.Step && cur.TimedOut {
			to := cur
			to.TimedOut, to.LastError = false, in.Error
			return Decision{Row: to}
		}
		return ignore("failure at %s does not rank above the row's %s", in.Step, describe(cur))
	}
	// Steps before the failed one are inferred: the failure proves they ran.
	ts := path(cur, row.Exists, in.Step, in)
	ts = append(ts, Transition{From: in.Step, To: StateMergeFailed, Reason: in.Error})
	to := cur
	to.State, to.FailedStep, to.LastError = StateMergeFailed, in.Step, in.Error
	to.TimedOut = in.Type == TypeTimedOut
	if rank(in.Step, "") >= rank(StateNotifying, "") {
		to.Merged = true
	}
	if in.Attempt > to.Attempts {
		to.Attempts = in.Attempt
	}
	return Decision{NewRun: newRun, Transitions: ts, Row: to}
}

// path lists the inferred transitions that lead from the row's position to
// target (empty when the row already is at target). A new row starts with
// "" -> VALIDATING; a MERGE_FAILED row continues from its failed step, so a
// success that arrives after its step failed or timed out heals the saga.
func path(cur Row, exists bool, target State, in Incoming) []Transition {
	var ts []Transition
	from, step := cur.State, cur.State
	switch {
	case !exists:
		ts = append(ts, Transition{From: "", To: StateValidating, Reason: "inferred from " + in.Type, Inferred: true})
		from, step = StateValidating, StateValidating
	case cur.State == StateMergeFailed:
		step = cur.FailedStep
	}
	for step != target && step != StateMerged && step != "" {
		n := next[step]
		ts = append(ts, Transition{From: from, To: n, Reason: "inferred from " + in.Type, Inferred: true})
		from, step = n, n
	}
	return ts
}

func describe(r Row) string {
	if r.State == StateMergeFailed {
		return fmt.Sprintf("MERGE_FAILED at %s", r.FailedStep)
	}
	return string(r.State)
}

// Retry is the operator's retry of a failed saga: MERGE_FAILED moves back to
// the failed step with attempts+1. The ledger replays that step's trigger.
func Retry(row Row) (Decision, error) {
	if !row.Exists {
		return Decision{}, fmt.Errorf("no saga for this PR")
	}
	if row.State != StateMergeFailed {
		return Decision{}, fmt.Errorf("saga is %s, not MERGE_FAILED: only a failed saga can be retried", row.State)
	}
	if !row.FailedStep.InFlight() {
		return Decision{}, fmt.Errorf("saga is MERGE_FAILED with no failed step (%q): nothing to retry", row.FailedStep)
	}
	to := row
	to.State, to.FailedStep, to.LastError, to.TimedOut = row.FailedStep, "", "", false
	to.Attempts = row.Attempts + 1
	return Decision{
		Transitions: []Transition{{From: StateMergeFailed, To: row.FailedStep, Reason: fmt.Sprintf("retry (attempt %d)", to.Attempts)}},
		Row:         to,
	}, nil
}
