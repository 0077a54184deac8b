package validator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prsaga/prsaga/contracts"
)

// Facts are what a validation decides on, gathered by the handler: the
// request and its validation result, the branch heads read from the
// repository, the target branch's required contexts, the latest statuses of
// the requested head, and the PR's lock.
type Facts struct {
	// CorrelationID and Attempt are the requested event's run and attempt.
	CorrelationID string
	Attempt       int
	Request       contracts.Request
	// Invalid is the request's validation error (contracts.Request.Validate);
	// when set, nothing else is looked at.
	Invalid error
	// Missing, when set, matches ErrNotFound and says which of the
	// repository or the two branches does not exist.
	Missing error
	// SourceHead and TargetHead are the branches' heads as read just before
	// the decision.
	SourceHead, TargetHead string
	// Required lists the contexts the target branch requires, in order.
	Required []string
	// Statuses are the latest statuses of the request's head_sha.
	Statuses []Status
	// Lock is the PR's lock row as read in the deciding transaction.
	Lock Lock
}

// Outcome is a decision: exactly one of Validated and Failed is set. Lock is
// the PR's lock afterwards; LockChanged says it must be written.
type Outcome struct {
	Validated   *contracts.Validated
	Failed      *contracts.StepFailed
	Lock        Lock
	LockChanged bool
}

// Code is the failure code, or "" for a validated run.
func (o Outcome) Code() string {
	if o.Failed == nil {
		return ""
	}
	return o.Failed.Code
}

// Decide validates one run (design §6). It is pure. The checks, in order:
// the request's fields (invalid_request), the PR merged for good
// (already_merged), its lock held by another run (in_progress), the
// repository and both branches (not_found), the source head against head_sha
// (head_moved), the required contexts on head_sha (checks_failed, then
// checks_pending). A valid run takes the lock, or keeps it when it already
// holds it (re-entrant: a replay of the same run).
func Decide(f Facts) Outcome {
	r := f.Request
	fail := func(code string, retryable bool, format string, args ...any) Outcome {
		return Outcome{
			Failed: &contracts.StepFailed{
				Request:   r,
				Step:      contracts.StateValidating,
				Code:      code,
				Reason:    Reason(fmt.Sprintf(format, args...)),
				Retryable: retryable,
			},
			Lock: f.Lock,
		}
	}
	switch {
	case f.Invalid != nil:
		return fail(contracts.CodeInvalidRequest, false, "invalid request: %s", f.Invalid)
	case f.Lock.Merged:
		return fail(contracts.CodeAlreadyMerged, false, "%s is already merged", r.PRID)
	case f.Lock.Held() && f.Lock.Holder != f.CorrelationID:
		// Answered with this request's correlation id (the caller builds the
		// event with Follow), so it never matches — nor releases — the holder.
		return fail(contracts.CodeInProgress, true, "run %s of %s is in flight; request again once it has finished", f.Lock.Holder, r.PRID)
	case f.Missing != nil:
		if !errors.Is(f.Missing, ErrNotFound) {
			// A programming error in the caller; say so rather than guess.
			return fail(contracts.CodeNotFound, true, "%s (unexpected)", f.Missing)
		}
		return fail(contracts.CodeNotFound, false, "%s", f.Missing)
	case f.SourceHead != r.HeadSHA:
		return fail(contracts.CodeHeadMoved, false, "source branch %s is at %s, not at the requested head_sha %s", r.SourceBranch, f.SourceHead, r.HeadSHA)
	}

	latest := make(map[string]string, len(f.Statuses))
	for _, s := range f.Statuses {
		latest[s.Context] = s.State
	}
	var failed, pending []string
	checks := make([]contracts.Check, 0, len(f.Required))
	for _, c := range f.Required {
		switch st := latest[c]; st {
		case StateSuccess:
			checks = append(checks, contracts.Check{Context: c, State: st})
		case StateFailure, StateError:
			failed = append(failed, fmt.Sprintf("%s (%s)", c, st))
		case "":
			pending = append(pending, c+" (missing)")
		default:
			pending = append(pending, fmt.Sprintf("%s (%s)", c, st))
		}
	}
	if len(failed) > 0 {
		return fail(contracts.CodeChecksFailed, true, "required checks failed on %s: %s", r.HeadSHA, strings.Join(failed, ", "))
	}
	if len(pending) > 0 {
		return fail(contracts.CodeChecksPending, true, "required checks not yet successful on %s: %s", r.HeadSHA, strings.Join(pending, ", "))
	}

	lock, changed := f.Lock.Take(f.CorrelationID, f.Attempt)
	return Outcome{
		Validated:   &contracts.Validated{Request: r, BaseSHA: f.TargetHead, Checks: checks},
		Lock:        lock,
		LockChanged: changed,
	}
}

// Reason makes s fit a step_failed reason: one line (a joined validation
// error has several), at most contracts.MaxReason bytes of valid UTF-8.
func Reason(s string) string { return contracts.FitReason(s) }
