package contracts

import (
	"errors"
	"time"
	"unicode/utf8"
)

// Request is what a merge request carries; every later event carries it
// forward (event-carried state: no step looks anything up in another service).
type Request struct {
	PRID         string `json:"pr_id"`
	Repo         string `json:"repo"`
	PRNumber     int    `json:"pr_number"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
	HeadSHA      string `json:"head_sha"`
	Strategy     string `json:"strategy"`
	Title        string `json:"title"`
	RequestedBy  string `json:"requested_by"`
}

// Limits on free-text fields, so that hostile input cannot bloat every event.
const (
	MaxTitle       = 1024
	MaxRequestedBy = 256
	MaxReason      = 4096
	MaxListItems   = 1000
)

// Validate reports every invalid field of a request, joined with
// errors.Join: a client sees all its mistakes at once. Each error matches
// ErrInvalid and names its field.
func (r Request) Validate() error {
	errs := []error{r.ValidateIdentity()}
	add := func(err error) { errs = append(errs, err) }
	add(ValidateBranch("source_branch", r.SourceBranch))
	add(ValidateBranch("target_branch", r.TargetBranch))
	if r.SourceBranch != "" && r.SourceBranch == r.TargetBranch {
		add(fieldErr("source_branch", "equals target_branch %q", truncate(r.TargetBranch)))
	}
	add(ValidateSHA("head_sha", r.HeadSHA))
	add(ValidateStrategy(r.Strategy))
	add(validText("title", r.Title, MaxTitle, false))
	add(validText("requested_by", r.RequestedBy, MaxRequestedBy, true))
	return errors.Join(errs...)
}

// ValidateIdentity checks only what attributes an event to a saga: pr_id,
// repo and pr_number, consistent with each other; every problem is reported
// (joined). An event that fails this has no saga to answer and is
// dead-lettered; one that passes but fails Validate is answered with
// step_failed(VALIDATING, invalid_request).
func (r Request) ValidateIdentity() error {
	repo, n, err := ParsePRID(r.PRID)
	if err != nil {
		// Nothing to compare with: still say what else is wrong on its own.
		errs := []error{err}
		if r.Repo == "" {
			errs = append(errs, fieldErr("repo", "is missing"))
		} else {
			errs = append(errs, ValidateRepo(r.Repo))
		}
		if r.PRNumber <= 0 {
			errs = append(errs, fieldErr("pr_number", "must be a positive integer, not %d", r.PRNumber))
		}
		return errors.Join(errs...)
	}
	var errs []error
	switch {
	case r.Repo == "":
		errs = append(errs, fieldErr("repo", "is missing (pr_id %q names %q)", r.PRID, repo))
	case r.Repo != repo:
		errs = append(errs, fieldErr("repo", "%q does not match pr_id %q", truncate(r.Repo), r.PRID))
	}
	switch {
	case r.PRNumber == 0:
		errs = append(errs, fieldErr("pr_number", "is missing (pr_id %q names %d)", r.PRID, n))
	case r.PRNumber != n:
		errs = append(errs, fieldErr("pr_number", "%d does not match pr_id %q", r.PRNumber, r.PRID))
	}
	return errors.Join(errs...)
}

func validText(field, s string, max int, required bool) error {
	switch {
	case required && s == "":
		return fieldErr(field, "is empty")
	case len(s) > max:
		return fieldErr(field, "is %d bytes long (at most %d)", len(s), max)
	case !utf8.ValidString(s):
		return fieldErr(field, "is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return fieldErr(field, "contains control character %q", r)
		}
	}
	return nil
}

// Check is one commit status context the validator saw.
type Check struct {
	Context string `json:"context"`
	State   string `json:"state"`
}

// Validated is the payload of prsaga.merge.validated.v1.
type Validated struct {
	Request
	BaseSHA string  `json:"base_sha"`
	Checks  []Check `json:"checks"`
}

// Merged is the payload of prsaga.merge.merged.v1.
type Merged struct {
	Request
	BaseSHA       string   `json:"base_sha"`
	MergeSHA      string   `json:"merge_sha"`
	AlreadyMerged bool     `json:"already_merged"`
	ChangedPaths  []string `json:"changed_paths"`
}

// Delivery is one watcher's webhook outcome. Watcher ids, never URLs: a
// webhook URL is a secret.
type Delivery struct {
	WatcherID string `json:"watcher_id"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
}

// Notified is the payload of prsaga.merge.notified.v1.
type Notified struct {
	Request
	MergeSHA     string     `json:"merge_sha"`
	ChangedPaths []string   `json:"changed_paths"`
	Deliveries   []Delivery `json:"deliveries"`
}

// Indexed is the payload of prsaga.merge.indexed.v1.
type Indexed struct {
	Request
	MergeSHA  string `json:"merge_sha"`
	Documents int    `json:"documents"`
}

// Failure codes of step_failed.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeChecksFailed     = "checks_failed"
	CodeChecksPending    = "checks_pending"
	CodeHeadMoved        = "head_moved"
	CodeNotFound         = "not_found"
	CodeInProgress       = "in_progress"
	CodeAlreadyMerged    = "already_merged"
	CodeConflict         = "conflict"
	CodeNotFastForward   = "not_fast_forward"
	CodeWebhookFailed    = "webhook_failed"
	CodeIndexError       = "index_error"
	CodeRetriesExhausted = "retries_exhausted"
	// CodeLockLost: a retry at MERGING whose run no longer holds the PR's
	// lock (another run of the PR took it). The validator, which keeps the
	// lock, answers it for the merge step: nothing was merged.
	CodeLockLost = "lock_lost"
)

// StepFailed is the payload of prsaga.merge.step_failed.v1. Its Request may
// hold the invalid fields that caused an invalid_request failure.
type StepFailed struct {
	Request
	Step      State    `json:"step"`
	Code      string   `json:"code"`
	Reason    string   `json:"reason"`
	Retryable bool     `json:"retryable"`
	Conflicts []string `json:"conflicts,omitempty"`
}

// TimedOut is the payload of prsaga.merge.timed_out.v1.
type TimedOut struct {
	Request
	Step        State     `json:"step"`
	Deadline    time.Time `json:"deadline"`
	LastEventID string    `json:"last_event_id"`
	Diagnosis   string    `json:"diagnosis"`
}

// StateChanged is the payload of prsaga.saga.state_changed.v1.
type StateChanged struct {
	PRID       string `json:"pr_id"`
	FromState  State  `json:"from_state"`
	ToState    State  `json:"to_state"`
	FailedStep State  `json:"failed_step,omitempty"`
	Merged     bool   `json:"merged"`
	MergeSHA   string `json:"merge_sha,omitempty"`
	Reason     string `json:"reason"`
}

// Validate checks the fields a validated event adds.
func (v Validated) Validate() error {
	return errors.Join(v.Request.Validate(), optSHA("base_sha", v.BaseSHA), listLen("checks", len(v.Checks)))
}

// Validate checks the fields a merged event adds.
func (m Merged) Validate() error {
	return errors.Join(m.Request.Validate(), optSHA("base_sha", m.BaseSHA),
		ValidateSHA("merge_sha", m.MergeSHA), listLen("changed_paths", len(m.ChangedPaths)))
}

// Validate checks the fields a notified event adds.
func (n Notified) Validate() error {
	return errors.Join(n.Request.Validate(), ValidateSHA("merge_sha", n.MergeSHA),
		listLen("changed_paths", len(n.ChangedPaths)), listLen("deliveries", len(n.Deliveries)))
}

// Validate checks the fields an indexed event adds.
func (i Indexed) Validate() error {
	return errors.Join(i.Request.Validate(), ValidateSHA("merge_sha", i.MergeSHA))
}

// Validate checks a step failure. Only the identity of the request must be
// valid: an invalid_request failure answers a request with invalid fields.
func (f StepFailed) Validate() error {
	return errors.Join(f.Request.ValidateIdentity(), validStep(f.Step),
		validText("code", f.Code, 64, true), validText("reason", f.Reason, MaxReason, false),
		listLen("conflicts", len(f.Conflicts)))
}

// Validate checks a timeout.
func (t TimedOut) Validate() error {
	return errors.Join(t.Request.ValidateIdentity(), validStep(t.Step),
		validText("diagnosis", t.Diagnosis, MaxReason, false))
}

// Validate checks a state change announcement.
func (s StateChanged) Validate() error {
	_, _, err := ParsePRID(s.PRID)
	return err
}

func validStep(s State) error {
	if !s.InFlight() {
		return fieldErr("step", "%q is not one of VALIDATING, MERGING, NOTIFYING, INDEXING", truncate(string(s)))
	}
	return nil
}

func optSHA(field, sha string) error {
	if sha == "" {
		return nil
	}
	return ValidateSHA(field, sha)
}

func listLen(field string, n int) error {
	if n > MaxListItems {
		return fieldErr(field, "has %d items (at most %d)", n, MaxListItems)
	}
	return nil
}
