package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
)

// Verification of the projection against the ledger's own event log
// (design §5 "Verify and repair"). The log is saga_event: every event the
// ledger projected, applied or ignored, with the time it projected it
// (received_at, which also stamped the row) and the time the stream stored
// it (stored_at, which stamped the transitions it caused). Replaying it in
// received_at order through the same Projector, with its clock set to each
// event's received_at and the event's stored_at given as the runner gives
// it, rebuilds pr_saga and saga_transition as they were written — times
// included. What is not an event is an operator's retry:
// it moves the row itself and puts a replay of the step's trigger in the
// outbox, which the ledger records later (ignored, the row having moved).
// The replay carries the retry's time and attempt, so the retry is redone
// at that time by the Retrier's own code; only the operator's name is in
// no event, and is taken from the live transition the replay names.

// Recorded is what the ledger holds of one PR: its recorded events in
// projection order (received_at, then event_id) and its row and
// transitions as stored. Row.Exists is false when there is no row.
type Recorded struct {
	PRID        string
	Events      []Event
	Row         contracts.Row
	Transitions []Transition
}

// LogReader reads the ledger's tables PR by PR for verification.
type LogReader interface {
	// EachRecorded calls fn for every PR that has a row, a transition or an
	// event, in pr_id order, from one consistent snapshot of the tables
	// (the ledger may keep writing meanwhile). An error from fn stops the
	// walk and is returned.
	EachRecorded(ctx context.Context, fn func(Recorded) error) error
}

// Diff is one difference between the live tables and the log's re-derivation.
type Diff struct {
	// What: "missing row", "extra row", "column", "missing transition",
	// "extra transition", "transition", or DiffUnreadable (Column holds
	// the event id, Log why it does not open).
	What   string `json:"what"`
	Column string `json:"column,omitempty"` // for column / transition: which one
	Seq    int64  `json:"seq,omitempty"`    // for transitions
	Live   string `json:"live,omitempty"`
	Log    string `json:"log,omitempty"`
}

// DiffUnreadable: a recorded event of the PR no longer decodes or opens,
// so the PR cannot be re-derived (nor repaired).
const DiffUnreadable = "unreadable event"

// SagaCheck is the verdict on one PR.
type SagaCheck struct {
	PRID string `json:"pr_id"`
	// Unverifiable says why the PR could not be re-derived ("" when it
	// was): its event bodies were pruned (and no stream had them).
	Unverifiable string `json:"unverifiable,omitempty"`
	Diffs        []Diff `json:"diffs,omitempty"`
	// Want is the re-derived row (Exists false: the log makes none) and
	// WantTransitions its history: what a repair writes.
	Want            contracts.Row `json:"-"`
	WantTransitions []Transition  `json:"-"`
	Live            contracts.Row `json:"-"`
	LiveTransitions []Transition  `json:"-"`
}

// discardLog takes the projection's log lines of a re-derivation: it
// repeats history, which was logged when it happened.
var discardLog = slog.New(slog.DiscardHandler)

// Rederiver replays one PR's recorded events into a scratch store.
type Rederiver struct {
	// Scratch is an empty ledger store, written PR by PR; it must not be
	// the live one.
	Scratch *Store
	// Body, when set, supplies the body of an event whose body was pruned
	// (from the stream, where it may still be); found false when it has none.
	Body func(eventID string) (body []byte, found bool)
	// Branches, when set, is what Verify checks every merged saga's merge
	// commit against: it must be on the saga's target branch
	// (verifymerges.go).
	Branches Branches
}

// Check re-derives rec's PR in the scratch store and compares the result
// with rec's row and transitions.
func (r *Rederiver) Check(ctx context.Context, rec Recorded) (SagaCheck, error) {
	cs, err := r.CheckAll(ctx, []Recorded{rec})
	if err != nil {
		return SagaCheck{}, err
	}
	return cs[0], nil
}

// CheckAll is Check of several PRs, re-derived in one transaction of the
// scratch store (a commit per PR would cost more than the PR's events).
func (r *Rederiver) CheckAll(ctx context.Context, recs []Recorded) ([]SagaCheck, error) {
	cs := make([]SagaCheck, len(recs))
	plans := make([][]action, len(recs))
	for i, rec := range recs {
		cs[i] = SagaCheck{PRID: rec.PRID, Live: rec.Row, LiveTransitions: rec.Transitions}
		evs, ok := r.bodies(rec.Events)
		if !ok {
			cs[i].Unverifiable = "not verifiable from the log (event bodies pruned)"
			continue
		}
		plan, bad := r.actions(rec, evs)
		if bad != nil {
			// The PR cannot be replayed as the ledger projected it: that
			// is itself a difference between the log and the tables.
			cs[i].Diffs = []Diff{*bad}
			continue
		}
		plans[i] = plan
	}
	proj := &Projector{}
	err := r.Scratch.Update(ctx, func(tx Tx) error {
		for i, plan := range plans {
			if err := redo(ctx, tx, proj, recs[i].PRID, plan); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, rec := range recs {
		c := &cs[i]
		if c.Unverifiable != "" || len(c.Diffs) > 0 {
			continue
		}
		if c.Want, err = r.Scratch.SagaRow(ctx, rec.PRID); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if c.WantTransitions, err = r.Scratch.Transitions(ctx, rec.PRID); err != nil {
			return nil, err
		}
		c.Diffs = compare(rec.Row, c.Want, rec.Transitions, c.WantTransitions)
	}
	return cs, nil
}

// bodies are evs with every pruned body supplied by Body; ok is false
// when one has none.
func (r *Rederiver) bodies(evs []Event) (_ []Event, ok bool) {
	out := make([]Event, len(evs))
	copy(out, evs)
	for i, e := range out {
		if len(e.Event) != 0 {
			continue
		}
		if r.Body == nil {
			return nil, false
		}
		b, found := r.Body(e.EventID)
		if !found {
			return nil, false
		}
		out[i].Event = b
	}
	return out, true
}

// redo performs a PR's actions in tx with proj's clock at each one's time.
func redo(ctx context.Context, tx Tx, proj *Projector, prID string, plan []action) error {
	for _, s := range plan {
		at := s.at
		proj.Now = func() time.Time { return at }
		if s.retry {
			req := RetryRequest{PRID: prID, Actor: s.actor, Force: true}
			if _, err := proj.retry(ctx, tx, req, s.ev.EventID, nil); err != nil {
				var rf refusal
				if errors.As(err, &rf) {
					continue // the log holds a replay its row cannot have had: the comparison says so
				}
				return fmt.Errorf("re-derive %s: redo retry %s: %w", prID, s.ev.EventID, err)
			}
			continue
		}
		if _, err := proj.Project(step.WithStoredAt(ctx, s.ev.StoredAt), tx, s.env, discardLog); err != nil {
			return fmt.Errorf("re-derive %s: project %s: %w", prID, s.ev.EventID, err)
		}
	}
	return nil
}

// action is one thing the ledger did to a PR: project an event, or redo the
// operator's retry that sent a replay.
type action struct {
	at    time.Time
	retry bool
	actor string
	ev    Event
	env   contracts.Envelope
}

func (r *Rederiver) actions(rec Recorded, evs []Event) ([]action, *Diff) {
	var out []action
	for _, e := range evs {
		ce, err := e.CloudEvent()
		if err == nil {
			var env contracts.Envelope
			if env, err = contracts.Open(ce); err == nil {
				out = append(out, r.actionsOf(rec, e, ce.Time(), env)...)
				continue
			}
		}
		// The ledger opened it when it recorded it: the body was damaged
		// since, or a rule of the contract tightened.
		return nil, &Diff{What: DiffUnreadable, Column: e.EventID, Log: err.Error()}
	}
	// The retry before the events the ledger received after it; on the
	// same microsecond, the retry first (its replay is always later).
	slices.SortStableFunc(out, func(a, b action) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		switch {
		case a.retry && !b.retry:
			return -1
		case b.retry && !a.retry:
			return 1
		}
		return 0
	})
	return out, nil
}

// actionsOf is what the ledger did with one recorded event: project it,
// and first, for a replay, the retry that sent it (which moved the row at
// the replay's time, before the ledger recorded the replay itself).
func (r *Rederiver) actionsOf(rec Recorded, e Event, at time.Time, env contracts.Envelope) []action {
	var out []action
	if env.Meta.ReplayOf != "" && !learnedFromReplay(rec.Transitions, e) {
		out = append(out, action{at: at.UTC().Truncate(time.Microsecond), retry: true,
			actor: retryActor(rec.Transitions, e.EventID), ev: e})
	}
	return append(out, action{at: e.ReceivedAt, ev: e, env: env})
}

// learnedFromReplay reports whether the ledger holds a retry only through
// its replay e: the replay was applied (a replay of a retry this ledger
// made is recorded ignored, the retry having moved the row) and no live
// transition of the replay is the retry's own (an operator's, not the
// replay's source). That is a ledger restored from a backup taken before
// the retry: the retry's move was in the replaced tables, and catching up
// from the stream the ledger folded the replay into the row (contracts
// FoldRun: a replay stands for the retry that sent it). Verify then
// projects the replay as that ledger did and redoes no retry.
func learnedFromReplay(ts []Transition, e Event) bool {
	if e.Status != StatusApplied {
		return false
	}
	ce, err := e.CloudEvent()
	if err != nil {
		return false
	}
	for _, t := range ts {
		if t.EventID == e.EventID && t.From == contracts.StateMergeFailed && t.Actor != ce.Source() {
			return false
		}
	}
	return true
}

// retryActor is who retried: no event names the operator, so it is read
// from the live transition caused by the replay ("" when there is none,
// and the comparison reports that transition missing).
func retryActor(ts []Transition, replayID string) string {
	for _, t := range ts {
		if t.EventID == replayID && t.From == contracts.StateMergeFailed {
			return t.Actor
		}
	}
	return ""
}

// compare lists every difference between the live row and history and
// the re-derived ones.
func compare(live, want contracts.Row, liveTs, wantTs []Transition) []Diff {
	var ds []Diff
	switch {
	case !live.Exists && want.Exists:
		ds = append(ds, Diff{What: "missing row", Log: describeRow(want)})
	case live.Exists && !want.Exists:
		ds = append(ds, Diff{What: "extra row", Live: describeRow(live)})
	case live.Exists:
		ds = append(ds, rowColumns(live, want)...)
	}
	byLive := map[int64]Transition{}
	for _, t := range liveTs {
		byLive[t.Seq] = t
	}
	byWant := map[int64]Transition{}
	for _, t := range wantTs {
		byWant[t.Seq] = t
		l, ok := byLive[t.Seq]
		if !ok {
			ds = append(ds, Diff{What: "missing transition", Seq: t.Seq, Log: describeTransition(t)})
			continue
		}
		ds = append(ds, transitionColumns(l, t)...)
	}
	for _, t := range liveTs {
		if _, ok := byWant[t.Seq]; !ok {
			ds = append(ds, Diff{What: "extra transition", Seq: t.Seq, Live: describeTransition(t)})
		}
	}
	return ds
}

func rowColumns(l, w contracts.Row) []Diff {
	var ds []Diff
	col := func(name, lv, wv string) {
		if lv != wv {
			ds = append(ds, Diff{What: "column", Column: name, Live: lv, Log: wv})
		}
	}
	col("repo", l.Repo, w.Repo)
	col("correlation_id", l.CorrelationID, w.CorrelationID)
	col("state", string(l.State), string(w.State))
	col("failed_step", string(l.FailedStep), string(w.FailedStep))
	col("last_error", l.LastError, w.LastError)
	col("timed_out", fmt.Sprint(l.TimedOut), fmt.Sprint(w.TimedOut))
	col("attempts", fmt.Sprint(l.Attempts), fmt.Sprint(w.Attempts))
	col("merge_sha", l.MergeSHA, w.MergeSHA)
	col("merged", fmt.Sprint(l.Merged), fmt.Sprint(w.Merged))
	col("version", fmt.Sprint(l.Version), fmt.Sprint(w.Version))
	col("created_at", stamp(l.CreatedAt), stamp(w.CreatedAt))
	col("updated_at", stamp(l.UpdatedAt), stamp(w.UpdatedAt))
	return ds
}

func transitionColumns(l, w Transition) []Diff {
	var ds []Diff
	col := func(name, lv, wv string) {
		if lv != wv {
			ds = append(ds, Diff{What: "transition", Seq: w.Seq, Column: name, Live: lv, Log: wv})
		}
	}
	col("correlation_id", l.CorrelationID, w.CorrelationID)
	col("from_state", string(l.From), string(w.From))
	col("to_state", string(l.To), string(w.To))
	col("reason", l.Reason, w.Reason)
	col("event_id", l.EventID, w.EventID)
	col("inferred", fmt.Sprint(l.Inferred), fmt.Sprint(w.Inferred))
	col("actor", l.Actor, w.Actor)
	col("at", stamp(l.At), stamp(w.At))
	return ds
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func describeRow(r contracts.Row) string {
	return fmt.Sprintf("%s attempt %d run %s", describe(r), r.Attempts, r.CorrelationID)
}

func describeTransition(t Transition) string {
	from := string(t.From)
	if from == "" {
		from = "(new)"
	}
	return fmt.Sprintf("%s -> %s (%s, event %s)", from, t.To, t.Reason, t.EventID)
}

func describe(r contracts.Row) string {
	if r.State == contracts.StateMergeFailed {
		return fmt.Sprintf("MERGE_FAILED at %s", r.FailedStep)
	}
	return string(r.State)
}

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	Sagas int `json:"sagas"` // PRs examined
	Agree int `json:"agree"`
	// Unverifiable counts PRs the log cannot re-derive: their event bodies
	// were pruned by retention (and no stream had them). Not a difference.
	Unverifiable int `json:"unverifiable"`
	// Differ lists every PR whose row or history differs from the log's.
	Differ []SagaCheck `json:"differences"`
	// Repaired counts the PRs a repair rewrote; NotRepaired those it left
	// alone because the log could not re-derive them.
	Repaired    int `json:"repaired,omitempty"`
	NotRepaired int `json:"not_repaired,omitempty"`
	// MergesChecked counts the merged sagas whose merge commit was looked
	// for on its target branch (only when Verify was given Branches);
	// MergesUnchecked those that could not be: no readable event names
	// their target branch, or their repository is not in the repos dir.
	MergesChecked   int `json:"merges_checked,omitempty"`
	MergesUnchecked int `json:"merges_unchecked,omitempty"`
	// OffBranch lists the merged sagas whose merge commit is not on their
	// target branch, or could not be checked there. A repair changes
	// nothing of them: the log is right, the branch is not.
	OffBranch []OffBranch `json:"off_branch,omitempty"`
}

// Verify re-derives every PR live holds and compares (see Rederiver); with
// r.Branches set, it also checks that every merged saga's merge commit is
// on its target branch (OffBranch).
func Verify(ctx context.Context, live LogReader, r *Rederiver) (VerifyReport, error) {
	rep := VerifyReport{Differ: []SagaCheck{}}
	var batch []Recorded
	flush := func() error {
		cs, err := r.CheckAll(ctx, batch)
		if err != nil {
			return err
		}
		for _, rec := range batch {
			counted, unknown, off := r.checkMerge(ctx, rec)
			if counted {
				rep.MergesChecked++
			}
			if unknown {
				rep.MergesUnchecked++
			}
			if off != nil {
				rep.OffBranch = append(rep.OffBranch, *off)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		batch = batch[:0]
		for _, c := range cs {
			rep.Sagas++
			switch {
			case c.Unverifiable != "":
				rep.Unverifiable++
			case len(c.Diffs) > 0:
				rep.Differ = append(rep.Differ, c)
			default:
				rep.Agree++
			}
		}
		return nil
	}
	err := live.EachRecorded(ctx, func(rec Recorded) error {
		if batch = append(batch, rec); len(batch) < verifyBatch {
			return nil
		}
		return flush()
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	return rep, err
}

// verifyBatch is how many PRs one scratch transaction re-derives.
const verifyBatch = 200

// Repair rewrites every PR of rep that differs as the log re-derived it,
// one audited transaction each (see Repairer). A PR with an unreadable
// event is left alone (counted in NotRepaired): the log cannot say what
// its row should be. Run Verify again to see the result.
func Repair(ctx context.Context, to Repairer, rep *VerifyReport, a RepairAudit) error {
	for _, c := range rep.Differ {
		if !c.Rebuildable() {
			rep.NotRepaired++
			continue
		}
		if err := to.Repair(ctx, c, a); err != nil {
			return fmt.Errorf("repair %s: %w", c.PRID, err)
		}
		rep.Repaired++
	}
	return nil
}

// Rebuildable reports whether the log re-derived the PR: none of its
// events was unreadable.
func (c SagaCheck) Rebuildable() bool {
	for _, d := range c.Diffs {
		if d.What == DiffUnreadable {
			return false
		}
	}
	return true
}
