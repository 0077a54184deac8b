package gitrepo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// Strategies, as in the merge request (contracts.Strategy*).
const (
	StrategyFastForward = contracts.StrategyFastForward
	StrategyMerge       = contracts.StrategyMerge
	StrategySquash      = contracts.StrategySquash
)

// MaxChangedPaths caps Result.ChangedPaths, like every list in an event.
const MaxChangedPaths = contracts.MaxListItems

// MergeRequest says what to merge and how to sign it.
type MergeRequest struct {
	SourceBranch  string // the PR branch; must still point at HeadSHA
	TargetBranch  string // the branch to merge into, at its current head
	HeadSHA       string // the 40-hex PR head commit that is merged, exactly
	Strategy      string // StrategyFastForward, StrategyMerge or StrategySquash
	PRID          string // "<owner>/<name>#<number>", of this repository
	PRNumber      int    // the number in PRID
	CorrelationID string // the saga run, recorded as a trailer (empty: no trailer)
	Title         string // the PR title, for the commit message
	Author        Signature
	Committer     Signature // zero: the Author
	When          time.Time // author and committer time; zero: now
	// Journal records the merge and squash commits before the ref moves,
	// and is what proves a merge already done (Journal). Required.
	Journal Journal
}

// Signature is a commit author or committer.
type Signature struct {
	Name  string
	Email string
}

// Result is what a merge did, or found done.
type Result struct {
	// MergeSHA is the target's new head: HeadSHA for a fast-forward, else
	// the new merge or squash commit. When AlreadyMerged: the commit the
	// journal recorded for this PR, or HeadSHA itself when the PR head was
	// found reachable from the target head.
	MergeSHA string
	// BaseSHA is the target head the merge was made onto (the ref's old
	// value). When AlreadyMerged: the first parent of a recorded commit, or
	// empty when only the PR head was found (what it was merged onto is
	// no longer known).
	BaseSHA string
	// AlreadyMerged: the PR's work was already in the target; nothing was
	// written.
	AlreadyMerged bool
	// ChangedPaths are the file paths that differ between BaseSHA and
	// MergeSHA, sorted, at most MaxChangedPaths (nil when BaseSHA is empty).
	ChangedPaths []string
}

// validate checks every field before anything touches a ref, an object or
// a commit message; all problems are joined.
func (req MergeRequest) validate(repo string) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(contracts.ValidateBranch("source_branch", req.SourceBranch))
	add(contracts.ValidateBranch("target_branch", req.TargetBranch))
	if req.SourceBranch != "" && req.SourceBranch == req.TargetBranch {
		add(fmt.Errorf("source_branch equals target_branch %q", req.TargetBranch))
	}
	add(contracts.ValidateSHA("head_sha", req.HeadSHA))
	add(contracts.ValidateStrategy(req.Strategy))
	prRepo, n, err := contracts.ParsePRID(req.PRID)
	add(err)
	if err == nil && prRepo != repo {
		add(fmt.Errorf("pr_id %q is not of repository %q", req.PRID, repo))
	}
	if err == nil && n != req.PRNumber {
		add(fmt.Errorf("pr_number %d does not match pr_id %q", req.PRNumber, req.PRID))
	}
	if req.CorrelationID != "" {
		add(contracts.ValidateEventID(req.CorrelationID))
	}
	add(validSignature("author", req.Author))
	if req.Committer != (Signature{}) {
		add(validSignature("committer", req.Committer))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: merge request: %w", ErrInvalid, err)
	}
	return nil
}

// validSignature refuses what would corrupt a commit header (git fsck
// rejects names or emails with angle brackets or newlines).
func validSignature(field string, s Signature) error {
	switch {
	case strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Email) == "":
		return fmt.Errorf("%s needs a name and an email", field)
	case strings.ContainsAny(s.Name+s.Email, "<>\n\r\x00"):
		return fmt.Errorf("%s %q <%s> contains <, >, a newline or NUL", field, gitobj.Truncate(s.Name), gitobj.Truncate(s.Email))
	}
	return nil
}
