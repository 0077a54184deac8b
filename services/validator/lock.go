package validator

import "github.com/prsaga/prsaga/contracts"

// Lock is a PR's one-run lock (DESIGN §4). The zero value is a free lock of
// a PR never merged.
type Lock struct {
	// Holder is the correlation id of the run holding the lock; "" when free.
	Holder string
	// Attempt is the highest attempt of the holder that took the lock. A
	// failure of an earlier attempt, delivered late, must not release the
	// lock that a retry of the same run took again.
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
//   - merged marks the PR merged for good (whichever run merged it);
//   - the holder's indexed releases the lock;
//   - the holder's step_failed at VALIDATING or MERGING releases it, unless
//     it is of an attempt older than the one that took the lock, or it is an
//     in_progress / already_merged answer (those answer another request;
//     they carry that request's run, so they cannot match the holder anyway
//     — the code check is defence in depth);
//   - timed_out never releases it: the step may still be working.
func (l Lock) After(env contracts.Envelope) (Lock, bool) {
	run := env.Meta.CorrelationID
	switch p := env.Payload.(type) {
	case *contracts.Merged:
		if l.Merged {
			return l, false
		}
		l.Merged = true
		return l, true
	case *contracts.Indexed:
		if l.Holder != run {
			return l, false
		}
		return l.release(), true
	case *contracts.StepFailed:
		switch {
		case l.Holder != run,
			p.Step != contracts.StateValidating && p.Step != contracts.StateMerging,
			p.Code == contracts.CodeInProgress || p.Code == contracts.CodeAlreadyMerged,
			env.Meta.Attempt < l.Attempt:
			return l, false
		}
		return l.release(), true
	}
	return l, false
}

func (l Lock) release() Lock {
	l.Holder, l.Attempt = "", 0
	return l
}
