package validator

import "github.com/prsaga/prsaga/contracts"

// Lock is a PR's one-run lock (design §4). The zero value is a free lock of
// a PR never merged.
//
// The lock follows its run's current attempt, whichever step that attempt is
// in: a retry at MERGING is the ledger's replay of validated, which only the
// validator's lock consumer reads — it moves the lock to the retry's attempt
// and hands the merger a validated (Regrant), or fails the retry with
// lock_lost when another run holds the lock, so that nothing is merged
// outside the lock of its run. A release names the attempt that released,
// and only the current attempt (or a later one) releases. A slow step of an
// old attempt that fails after a retry took over therefore never frees the
// PR while the retry runs.
type Lock struct {
	// Holder is the correlation id of the run holding the lock; "" when free.
	Holder string
	// Attempt is the holder's current attempt: the highest seen of the run
	// that holds it. On a free lock it is the attempt that released it, so
	// that a replay of that same attempt, redelivered after the release,
	// does not take the lock again.
	Attempt int
	// Merged is true once the PR has been merged, for good.
	Merged bool
}

// Held reports whether a run holds the lock.
func (l Lock) Held() bool { return l.Holder != "" }

// Take gives the lock to run (correlation id) at attempt, re-entrantly. It
// reports whether the lock changed. The caller has checked that the lock is
// free or already the run's.
func (l Lock) Take(run string, attempt int) (Lock, bool) {
	if l.Holder == run {
		if attempt <= l.Attempt {
			return l, false
		}
		l.Attempt = attempt
		return l, true
	}
	l.Holder, l.Attempt = run, attempt
	return l, true
}

// After applies an event of the lock consumer to the lock and reports
// whether it changed:
//   - any event of the holder's run with a later attempt moves the lock to
//     that attempt (a retry replays a step's trigger at attempt+1, and only
//     a retry at VALIDATING passes the validator's own decision);
//   - a replayed validated (a retry at MERGING) is Regrant's;
//   - merged marks the PR merged for good (whichever run merged it) and
//     frees the lock: Decide answers already_merged before it looks at a
//     holder, so no run can be validated again and nothing need wait for
//     the run's last step;
//   - the holder's step_failed at VALIDATING or MERGING releases it, unless
//     it is of an attempt older than the lock's current attempt, or it is an
//     in_progress / already_merged answer (those answer another request;
//     they carry that request's run, so they cannot match the holder anyway
//     — the code check is defence in depth);
//   - timed_out never releases it: the step may still be working.
func (l Lock) After(env contracts.Envelope) (Lock, bool) {
	run, attempt := env.Meta.CorrelationID, env.Meta.Attempt
	changed := false
	if l.Holder == run && attempt > l.Attempt {
		l.Attempt, changed = attempt, true
	}
	switch p := env.Payload.(type) {
	case *contracts.Merged:
		if !l.Merged || l.Held() {
			l.Merged = true
			return l.release(), true
		}
	case *contracts.StepFailed:
		switch {
		case l.Holder != run,
			p.Step != contracts.StateValidating && p.Step != contracts.StateMerging,
			p.Code == contracts.CodeInProgress || p.Code == contracts.CodeAlreadyMerged || p.Code == contracts.CodeLockLost,
			attempt < l.Attempt:
		default:
			return l.release(), true
		}
	}
	return l, changed
}

// Regrant decides a retry at MERGING of run at attempt (the ledger's
// replayed validated): the run may merge when it holds the lock, or when
// the lock is free and was not released by this attempt or a later one (a
// stale replay). It returns the lock with the run's attempt, whether that
// changed it, and whether the merge may go ahead.
func (l Lock) Regrant(run string, attempt int) (next Lock, changed, granted bool) {
	switch {
	case l.Holder == run:
		next, changed = l.Take(run, attempt)
		return next, changed, true
	case !l.Held() && attempt > l.Attempt:
		next, changed = l.Take(run, attempt)
		return next, changed, true
	}
	return l, false, false
}

// release frees the lock; Attempt keeps the attempt that released it.
func (l Lock) release() Lock {
	l.Holder = ""
	return l
}
