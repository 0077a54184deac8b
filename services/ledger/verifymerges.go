package ledger

import (
	"context"
	"errors"

	"github.com/prsaga/prsaga/contracts"
)

// Merges on their branches. The ledger records that a saga merged, and
// which commit; git holds the branch. Verify can check the two agree: a
// merged saga's merge commit must be reachable from its target branch. It
// is not when someone moved the branch back (a force push), or when a
// merger moved the ref after its lock was broken (docs/operating.md says
// on which storage that can happen). A repair cannot fix that — the log
// is right about what happened —; the operator puts the commit back.

// Branches says whether a branch of a repository reaches a commit
// (platform/gitreach reads the repos dir; cmd/prsaga wires it).
type Branches interface {
	// Reaches reports whether refs/heads/<branch> of repo reaches commit,
	// the branch's own commit included; an error when that cannot be
	// told: ErrNoRepository (wrapped) when the repository is not there at
	// all, another when the branch or commit is missing or unreadable.
	Reaches(ctx context.Context, repo, branch, commit string) (bool, error)
}

// ErrNoRepository: Branches has no such repository — the repos dir
// verify reads is not the merger's, or the repository was removed. Such a
// saga is counted unchecked, not reported.
var ErrNoRepository = errors.New("repository not in the repos dir")

// OffBranch is a merged saga whose merge commit was not found on its
// target branch.
type OffBranch struct {
	PRID     string `json:"pr_id"`
	Repo     string `json:"repo"`
	Branch   string `json:"target_branch"`
	MergeSHA string `json:"merge_sha"`
	// Problem: "not reachable from the branch", or why it could not be
	// checked (the repository, branch or commit missing, …).
	Problem string `json:"problem"`
}

// checkMerge checks rec's merge commit against its target branch: counted
// says it was a merged saga that was checked, unknown one that could not
// be (no event names its branch, or its repository is not there); off is
// set when the commit is not on the branch, or that could not be told.
func (r *Rederiver) checkMerge(ctx context.Context, rec Recorded) (counted, unknown bool, off *OffBranch) {
	row := rec.Row
	if r.Branches == nil || !row.Exists || !row.Merged || row.MergeSHA == "" {
		return false, false, nil
	}
	branch := r.targetBranch(rec)
	if branch == "" {
		return false, true, nil
	}
	o := OffBranch{PRID: rec.PRID, Repo: row.Repo, Branch: branch, MergeSHA: row.MergeSHA}
	ok, err := r.Branches.Reaches(ctx, row.Repo, branch, row.MergeSHA)
	switch {
	case errors.Is(err, ErrNoRepository):
		return false, true, nil
	case err != nil:
		o.Problem = "cannot be checked: " + err.Error()
	case !ok:
		o.Problem = "not reachable from the branch"
	default:
		return true, false, nil
	}
	return true, false, &o
}

// targetBranch is the branch the row's run merges into, read from one of
// the run's events (every saga payload carries the request); "" when no
// event of the run can be read (bodies pruned, and no stream had them).
func (r *Rederiver) targetBranch(rec Recorded) string {
	for _, e := range rec.Events {
		if e.CorrelationID != rec.Row.CorrelationID {
			continue
		}
		body := e.Event
		if len(body) == 0 && r.Body != nil {
			body, _ = r.Body(e.EventID)
		}
		if len(body) == 0 {
			continue
		}
		ce, err := Event{Event: body}.CloudEvent()
		if err != nil {
			continue
		}
		var req contracts.Request
		if contracts.Decode(ce, &req) == nil && req.TargetBranch != "" {
			return req.TargetBranch
		}
	}
	return ""
}
