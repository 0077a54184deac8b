package validator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// OnMergeRequested validates one run. The branch heads are read first,
// outside any transaction; the lock, protection and statuses are read, the
// decision made, the lock taken and the answer emitted in one transaction —
// atomic on either store: SQLite has one writer; on YDB a concurrent writer
// of the lock invalidates this transaction's read and DoTx runs it again.
func (v *Validator) OnMergeRequested(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	req := env.Req()
	facts := Facts{
		CorrelationID: env.Meta.CorrelationID,
		Attempt:       env.Meta.Attempt,
		Request:       req,
		Invalid:       env.ValidatePayload(),
	}
	if facts.Invalid == nil {
		if err := v.readHeads(&facts); err != nil {
			return nil, err
		}
	}
	id, at := step.FollowID(contracts.ServiceValidator, env), v.Now()
	return func(tx store.Tx) error {
		t, err := v.Store.Bind(tx)
		if err != nil {
			return err
		}
		f := facts // the commit may run more than once
		if err := v.readState(t, &f); err != nil {
			return err
		}
		out := Decide(f)
		if out.LockChanged {
			if err := t.PutLock(req.PRID, out.Lock); err != nil {
				return err
			}
		}
		typ, payload := contracts.TypeMergeValidated, any(out.Validated)
		if out.Failed != nil {
			typ, payload = contracts.TypeStepFailed, out.Failed
		}
		if err := answer(t, env, id, typ, at, payload); err != nil {
			return err
		}
		t.AfterCommit(func() {
			if out.Failed != nil {
				log.InfoContext(ctx, "validation failed", "code", out.Failed.Code, "reason", out.Failed.Reason,
					"retryable", out.Failed.Retryable, "emitted_id", id)
				return
			}
			log.InfoContext(ctx, "validated", "head_sha", req.HeadSHA, "base_sha", out.Validated.BaseSHA,
				"checks", len(out.Validated.Checks), "lock_taken", out.LockChanged, "emitted_id", id)
		})
		return nil
	}, nil
}

// readHeads reads both branch heads. A missing repository or branch is a
// fact for the decision; any other error is transient (retried).
func (v *Validator) readHeads(f *Facts) error {
	r := f.Request
	var err error
	if bh, ok := v.Heads.(BranchHeads); ok {
		var shas []string
		if shas, err = bh.HeadsOf(r.Repo, r.SourceBranch, r.TargetBranch); err == nil {
			f.SourceHead, f.TargetHead = shas[0], shas[1]
		}
	} else if f.SourceHead, err = v.Heads.Head(r.Repo, r.SourceBranch); err == nil {
		f.TargetHead, err = v.Heads.Head(r.Repo, r.TargetBranch)
	}
	if errors.Is(err, ErrNotFound) {
		f.Missing = err
		return nil
	}
	if err != nil {
		return fmt.Errorf("read branch heads: %w", err)
	}
	return nil
}

// readState reads what the decision needs from the validator's tables, in
// the deciding transaction.
func (v *Validator) readState(tx Tx, f *Facts) error {
	r := f.Request
	var err error
	if f.Lock, err = tx.Lock(r.PRID); err != nil {
		return err
	}
	if f.Invalid != nil || f.Missing != nil {
		return nil // the checks are not looked at
	}
	required, ok, err := tx.Protection(r.Repo, r.TargetBranch)
	if err != nil {
		return err
	}
	if !ok {
		required = v.Required
	}
	f.Required = required
	f.Statuses, err = tx.Statuses(r.Repo, r.HeadSHA)
	return err
}

// OnLockEvent applies a retry at MERGING (the ledger's replayed validated:
// OnMergeRetry), merged, step_failed and timed_out to the PR's lock
// (Lock.After has the rules).
func (v *Validator) OnLockEvent(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	if _, ok := env.Payload.(*contracts.Validated); ok && env.Route.Replay {
		return v.onMergeRetry(ctx, env, log)
	}
	prID := env.Req().PRID
	return func(tx store.Tx) error {
		t, err := v.Store.Bind(tx)
		if err != nil {
			return err
		}
		lock, err := t.Lock(prID)
		if err != nil {
			return err
		}
		next, changed := lock.After(env)
		if !changed {
			t.AfterCommit(func() { log.DebugContext(ctx, "pr lock unchanged", "holder", lock.Holder, "merged", lock.Merged) })
			return nil
		}
		if err := t.PutLock(prID, next); err != nil {
			return err
		}
		// One line per event: a merged both marks the PR and releases
		// the lock, which is one change to follow in the logs.
		merged, released := next.Merged && !lock.Merged, lock.Held() && !next.Held()
		t.AfterCommit(func() {
			switch {
			case merged && released:
				log.InfoContext(ctx, "pr marked merged, lock released", "holder", lock.Holder)
			case merged:
				log.InfoContext(ctx, "pr marked merged", "holder", next.Holder)
			case released:
				log.InfoContext(ctx, "pr lock released", "holder", lock.Holder)
			}
		})
		return nil
	}, nil
}

// onMergeRetry answers a retry at MERGING, which arrives as the ledger's
// replay of validated on the replay subject that only this consumer reads:
// under the run's lock (Lock.Regrant) it hands the merger a validated at
// the retry's attempt; when another run holds the lock it fails the retry
// with lock_lost, so that a merge never runs outside its run's lock.
// Lock, answer and emit are one transaction.
func (v *Validator) onMergeRetry(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	replay := env.Payload.(*contracts.Validated)
	run, attempt := env.Meta.CorrelationID, env.Meta.Attempt
	id, at := step.FollowID(contracts.ServiceValidator, env), v.Now()
	return func(tx store.Tx) error {
		t, err := v.Store.Bind(tx)
		if err != nil {
			return err
		}
		lock, err := t.Lock(replay.PRID)
		if err != nil {
			return err
		}
		next, changed, granted := lock.Regrant(run, attempt)
		if changed {
			if err := t.PutLock(replay.PRID, next); err != nil {
				return err
			}
		}
		typ, payload := contracts.TypeMergeValidated, any(*replay)
		if !granted {
			reason := fmt.Sprintf("run %s of this PR holds its lock: the retry of run %s did not merge; retry once that run has ended", lock.Holder, run)
			if !lock.Held() {
				reason = fmt.Sprintf("attempt %d of run %s was released already: this replay is stale and did not merge", attempt, run)
			}
			typ, payload = contracts.TypeStepFailed, contracts.StepFailed{
				Request: replay.Request, Step: contracts.StateMerging, Code: contracts.CodeLockLost,
				Reason: Reason(reason), Retryable: true,
			}
		}
		if err := answer(t, env, id, typ, at, payload); err != nil {
			return err
		}
		t.AfterCommit(func() {
			if granted {
				log.InfoContext(ctx, "merge retry under the lock", "attempt", attempt, "lock_moved", changed, "emitted_id", id)
				return
			}
			log.WarnContext(ctx, "merge retry refused: the run does not hold the lock", "holder", lock.Holder, "attempt", attempt, "emitted_id", id)
		})
		return nil
	}, nil
}

// answer emits the validator's answer to env — a validated or a
// step_failed of env's run, under id — in the transaction of t.
func answer(t Tx, env contracts.Envelope, id, typ string, at time.Time, payload any) error {
	ev, err := contracts.Follow(env.Event, id, typ, contracts.ServiceValidator, at, payload)
	if err != nil {
		return err
	}
	return t.Emit(ev)
}
