package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// errNoJournal: a merge request without a journal could not prove a squash
// already done, and would squash twice after a crash. A wiring mistake.
var errNoJournal = errors.New("merge request without a journal")

// alreadyMerged looks for the PR's work in the target, and accepts only
// two proofs, neither of which a PR's author can forge:
//
//   - a commit req.Journal recorded for this PR, reachable from the target
//     head: a merge or squash commit the merger itself wrote for this PR
//     (the journal is written by nobody else, before the ref moves);
//   - the PR head itself reachable from the target head: the PR's code is
//     in the target, whoever put it there (a fast-forward, or a merge made
//     outside prsaga).
//
// A commit message proves nothing — a Prsaga-PR trailer can be written by
// anyone who pushes a commit that a merge or a fast-forward of another PR
// brings into the target.
//
// Callers read the target ref before calling it: a merger that moved the
// ref had recorded its commit first, so whoever sees the moved ref finds
// the record.
func (r *Repo) alreadyMerged(ctx context.Context, req MergeRequest, target, head *object.Commit, bases []*object.Commit) (Result, bool, error) {
	recorded, err := req.Journal.Recorded(req.PRID)
	if err != nil {
		return Result{}, false, fmt.Errorf("read the merge journal of %s: %w", req.PRID, err)
	}
	slices.Sort(recorded) // the same answer whatever order the store lists them in
	for _, sha := range slices.Compact(recorded) {
		if contracts.ValidateSHA("recorded commit", sha) != nil {
			return Result{}, false, fmt.Errorf("merge journal of %s holds %q, not a commit sha", req.PRID, sha)
		}
		c, err := r.store.Commit(plumbing.NewHash(sha))
		if errors.Is(err, gitobj.ErrObjectMissing) {
			continue // a commit that never reached the target, pruned since
		}
		if err != nil {
			return Result{}, false, err
		}
		in, err := r.reaches(ctx, target, c)
		if err != nil {
			return Result{}, false, err
		}
		if in {
			res, err := r.recordedResult(ctx, c)
			return res, err == nil, err
		}
	}
	if head != nil && (head.Hash == target.Hash || len(bases) == 1 && bases[0].Hash == head.Hash) {
		return Result{MergeSHA: head.Hash.String(), AlreadyMerged: true}, true, nil
	}
	return Result{}, false, nil
}

// reaches reports whether c is target or one of its ancestors: then c is
// the one merge base of the two.
func (r *Repo) reaches(ctx context.Context, target, c *object.Commit) (bool, error) {
	if c.Hash == target.Hash {
		return true, nil
	}
	bases, err := r.history.MergeBases(ctx, target, c)
	if err != nil {
		return false, err
	}
	return len(bases) == 1 && bases[0].Hash == c.Hash, nil
}

// recordedResult is what a recorded merge found in the target did: made
// onto its first parent.
func (r *Repo) recordedResult(ctx context.Context, c *object.Commit) (Result, error) {
	res := Result{MergeSHA: c.Hash.String(), AlreadyMerged: true}
	if len(c.ParentHashes) == 0 {
		return res, nil
	}
	parent, err := r.store.Commit(c.ParentHashes[0])
	if err != nil {
		return Result{}, err
	}
	res.BaseSHA = parent.Hash.String()
	if res.ChangedPaths, err = r.engine().ChangedPaths(ctx, parent.TreeHash, c.TreeHash); err != nil {
		return Result{}, err
	}
	return res, nil
}

// record journals the commit a plan is about to put on the target, before
// the ref moves. A fast-forward is not recorded: its new head is the PR
// head, whose reachability proves the merge by itself.
func (r *Repo) record(req MergeRequest, p *plan) error {
	if req.Strategy == StrategyFastForward {
		return nil
	}
	err := req.Journal.Record(JournalEntry{
		Repo: r.name, PRID: req.PRID, CorrelationID: req.CorrelationID, TargetBranch: req.TargetBranch,
		Strategy: req.Strategy, Commit: p.new.String(), Base: p.old.String(),
	})
	if err != nil {
		return fmt.Errorf("record %s in the merge journal: %w", p.new, err)
	}
	return nil
}
