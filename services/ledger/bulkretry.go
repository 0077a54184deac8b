package ledger

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// MaxBulk bounds the sagas one bulk retry selects.
const MaxBulk = 10000

// BulkFilter selects failed sagas for a bulk retry (prsaga retry --all,
// POST /api/v1/retries): MERGE_FAILED is implied.
type BulkFilter struct {
	Step   contracts.State `json:"step,omitempty"`   // the failed step; "" any
	Repo   string          `json:"repo,omitempty"`   // "" any
	Since  time.Time       `json:"since,omitzero"`   // failed at or after; zero any
	Reason string          `json:"reason,omitempty"` // a regular expression the last error must match
	Limit  int             `json:"limit,omitempty"`  // at most this many; 0 = MaxBulk
}

// Validate checks the filter and compiles its reason pattern.
func (f BulkFilter) Validate() (*regexp.Regexp, error) {
	var errs []error
	if f.Step != "" && !slices.Contains(contracts.Steps, f.Step) {
		errs = append(errs, &contracts.FieldError{Field: "step", Problem: fmt.Sprintf("%q is not a step (VALIDATING, MERGING, NOTIFYING, INDEXING)", f.Step)})
	}
	if f.Repo != "" {
		errs = append(errs, contracts.ValidateRepo(f.Repo))
	}
	if f.Limit < 0 || f.Limit > MaxBulk {
		errs = append(errs, &contracts.FieldError{Field: "limit", Problem: fmt.Sprintf("must be between 0 (all, up to %d) and %d", MaxBulk, MaxBulk)})
	}
	var re *regexp.Regexp
	if f.Reason != "" {
		var err error
		if re, err = regexp.Compile(f.Reason); err != nil {
			errs = append(errs, &contracts.FieldError{Field: "reason", Problem: "is not a regular expression: " + err.Error()})
		}
	}
	return re, errors.Join(errs...)
}

// Lister pages through the ledger's sagas.
type Lister interface {
	List(ctx context.Context, f Filter) (Page, error)
}

// SelectFailed lists the failed sagas f matches, most recently failed
// first. It reads them all before anything is replayed, so that a replayed
// saga moving to the front of the order is neither seen twice nor missed.
func SelectFailed(ctx context.Context, l Lister, f BulkFilter) ([]Saga, error) {
	re, err := f.Validate()
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = MaxBulk
	}
	var out []Saga
	var after *Cursor
	for {
		page, err := l.List(ctx, Filter{State: contracts.StateMergeFailed, Repo: f.Repo, Limit: MaxLimit, After: after})
		if err != nil {
			return nil, err
		}
		for _, s := range page.Sagas {
			if !f.Since.IsZero() && s.UpdatedAt.Before(f.Since) {
				return out, nil // the rest failed earlier still
			}
			if f.Step != "" && s.FailedStep != f.Step || re != nil && !re.MatchString(s.LastError) {
				continue
			}
			if out = append(out, s); len(out) == limit {
				return out, nil
			}
		}
		if page.NextCursor == "" {
			return out, nil
		}
		c, err := ParseCursor(page.NextCursor)
		if err != nil {
			return nil, err
		}
		after = &c
	}
}

// Outcomes of one saga of a bulk retry.
const (
	BulkReplayed    = "replayed"     // replayed now
	BulkWouldReplay = "would_replay" // dry run: would be replayed
	BulkSkipped     = "skipped"      // already replayed for this failure, or no longer failed
	BulkRefused     = "refused"      // the retry was refused (e.g. needs force)
	BulkError       = "error"        // the retry could not be made (the store failed)
)

// BulkItem is what a bulk retry did with one saga.
type BulkItem struct {
	PRID      string          `json:"pr_id"`
	Step      contracts.State `json:"step"`
	Attempt   int             `json:"attempt"` // the failed attempt
	LastError string          `json:"last_error"`
	Outcome   string          `json:"outcome"`
	Why       string          `json:"why,omitempty"`
}

// BulkReport is a bulk retry's progress, and at the end its summary.
type BulkReport struct {
	Matched   int        `json:"matched"`
	Done      int        `json:"done"` // items handled so far
	Replayed  int        `json:"replayed"`
	Skipped   int        `json:"skipped"`
	Refused   int        `json:"refused"`
	Errors    int        `json:"errors"`
	DryRun    bool       `json:"dry_run,omitempty"`
	Finished  bool       `json:"finished"`
	Cancelled bool       `json:"cancelled,omitempty"`
	Items     []BulkItem `json:"items"`
}

// BulkRequest is a bulk retry: which sagas, and how.
type BulkRequest struct {
	BulkFilter
	DryRun bool    `json:"dry_run,omitempty"`
	Force  bool    `json:"force,omitempty"`
	Rate   float64 `json:"rate,omitempty"` // replays per second at most; 0 = no limit
	Actor  string  `json:"-"`
}

// Retryer is the single-saga retry a bulk retry repeats (Retrier).
type Retryer interface {
	Retry(ctx context.Context, req RetryRequest) (RetryAnswer, error)
}

// BulkKey is the Idempotency-Key of a bulk retry of one saga's failed
// attempt: a bulk retry run again after an interruption finds the answer
// it gave and replays nothing twice; a saga that failed again since (a
// higher attempt) is a new failure and is retried.
func BulkKey(s Saga) string { return fmt.Sprintf("bulk:%s:%d", s.PRID, s.Attempts) }

// BulkRetry retries each saga as the same audited single-saga retry as
// Retrier.Retry (one transaction, linked in the history, an
// Idempotency-Key per saga), at most req.Rate per second, calling progress
// after each. It stops early when ctx ends (Cancelled).
func BulkRetry(ctx context.Context, r Retryer, sagas []Saga, req BulkRequest, progress func(BulkReport)) BulkReport {
	rep := BulkReport{Matched: len(sagas), DryRun: req.DryRun, Items: make([]BulkItem, 0, len(sagas))}
	var interval time.Duration
	if req.Rate > 0 {
		interval = time.Duration(float64(time.Second) / req.Rate)
	}
	next := time.Now()
	for _, s := range sagas {
		if !req.DryRun && interval > 0 {
			if wait := time.Until(next); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
				case <-t.C:
				}
			}
			next = maxTime(next, time.Now()).Add(interval)
		}
		if ctx.Err() != nil {
			rep.Cancelled = true
			break
		}
		rep.Items = append(rep.Items, bulkOne(ctx, r, s, req))
		rep.count(rep.Items[len(rep.Items)-1].Outcome)
		if progress != nil {
			progress(rep)
		}
	}
	rep.Finished = true
	return rep
}

func bulkOne(ctx context.Context, r Retryer, s Saga, req BulkRequest) BulkItem {
	it := BulkItem{PRID: s.PRID, Step: s.FailedStep, Attempt: s.Attempts, LastError: s.LastError}
	rr := RetryRequest{PRID: s.PRID, Actor: req.Actor, Force: req.Force, DryRun: req.DryRun}
	if !req.DryRun {
		rr.IdempotencyKey = BulkKey(s)
	}
	// The saga in progress finishes though ctx ends: a cancel stops the
	// job between sagas, and the report says exactly what was replayed.
	ans, err := r.Retry(context.WithoutCancel(ctx), rr)
	switch {
	case err != nil:
		it.Outcome, it.Why = BulkError, err.Error()
	case ans.Repeated:
		it.Outcome, it.Why = BulkSkipped, fmt.Sprintf("already replayed for attempt %d by an earlier bulk retry", s.Attempts)
	case ans.Accepted && req.DryRun:
		it.Outcome, it.Why = BulkWouldReplay, fmt.Sprintf("replays %s as attempt %d", ans.Replay.EventType, ans.Replay.Attempt)
	case ans.Accepted:
		it.Outcome, it.Why = BulkReplayed, fmt.Sprintf("replayed %s as attempt %d", ans.Replay.EventType, ans.Replay.Attempt)
	case ans.NotFailed:
		it.Outcome, it.Why = BulkSkipped, ans.Refused
	default:
		it.Outcome, it.Why = BulkRefused, ans.Refused
	}
	return it
}

func (rep *BulkReport) count(outcome string) {
	rep.Done++
	switch outcome {
	case BulkReplayed, BulkWouldReplay:
		rep.Replayed++
	case BulkSkipped:
		rep.Skipped++
	case BulkRefused:
		rep.Refused++
	default:
		rep.Errors++
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
