package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Merge merges the PR head req.HeadSHA into the current head of
// req.TargetBranch with req.Strategy, and moves the target branch to the
// result:
//
//   - fast-forward: the target moves to HeadSHA, only if its head is an
//     ancestor of HeadSHA (ErrNotFastForward otherwise);
//   - merge: a merge commit with parents [target head, HeadSHA];
//   - squash: one commit with parent [target head] and the merge's tree.
//
// Merge and squash commits carry the Prsaga-PR and Prsaga-Correlation-Id
// trailers; their tree is the one `git merge-tree --write-tree` computes, or
// the merge fails with a *ConflictError (ErrConflict) — see treeMerge.
//
// Merge is idempotent: if the PR's work is already in the target (a commit
// req.Journal recorded for this PR reachable from the target head, or
// HeadSHA itself reachable from it — see alreadyMerged) it returns
// AlreadyMerged and writes nothing. That is checked first, so a redelivery
// succeeds even after the PR branch moved or was deleted; only then must
// the source branch still point at HeadSHA (ErrHeadMoved otherwise;
// ErrBranchNotFound if either branch is missing). A merge or squash commit
// is recorded in req.Journal before the ref moves to it.
//
// If another writer moves the target branch between planning and the ref
// update, the update fails without harm and the merge is planned again on
// the new head, already-merged check included; if the branch stays locked
// or keeps moving, Merge gives up with ErrTargetBusy. If the ref lock was
// broken while the update held it, Merge fails with ErrLockLost, the ref
// not moved (a redelivery plans the merge again). Merge is safe for
// concurrent use, and with other processes writing the repository.
//
// Merge stops when ctx is cancelled, returning ctx's error wrapped: it
// checks it while it plans (history walks, every directory and every file
// merged, the line diffs of large files) and while it waits for a busy
// ref. The point of no return is taking the target's ref lock: a merge
// cancelled before it leaves the ref where it was and no lock behind
// (what it wrote until then — loose objects nothing points at, perhaps a
// journal record of a commit that never reached the target — is harmless:
// see Journal); once the lock is taken, the ref update runs to its end
// (a few file operations) and the merge reports its result.
func (r *Repo) Merge(ctx context.Context, req MergeRequest) (Result, error) {
	if err := req.validate(r.name); err != nil {
		return Result{}, err
	}
	stopped := func(err error) (Result, error) {
		return Result{}, fmt.Errorf("merge %s into %s: stopped: %w", req.PRID, req.TargetBranch, err)
	}
	if err := ctx.Err(); err != nil {
		return stopped(err)
	}
	if req.Journal == nil {
		return Result{}, errNoJournal
	}
	if req.Committer == (Signature{}) {
		req.Committer = req.Author
	}
	if req.When.IsZero() {
		req.When = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.store.Session()()

	var p *plan
	var last error
	for attempt := 0; attempt < r.retry.attempts; attempt++ {
		if p == nil {
			r.store.Refresh()
			var err error
			if p, err = r.plan(ctx, req); err != nil {
				return Result{}, fmt.Errorf("merge %s into %s: %w", req.PRID, req.TargetBranch, err)
			}
			if p.result.AlreadyMerged {
				// A merger killed after moving the ref, before releasing
				// its lock, left the lock: git writers would wait for the
				// next merge into this branch to break it.
				_, _ = r.locks.BreakDead(gitobj.LoosePath(r.dir, req.TargetBranch) + ".lock")
				return p.result, nil
			}
			if err := ctx.Err(); err != nil {
				return stopped(err)
			}
			if err := r.record(req, p); err != nil {
				return Result{}, fmt.Errorf("merge %s into %s: %w", req.PRID, req.TargetBranch, err)
			}
			call(r.hooks.beforeRefUpdate)
		}
		if err := ctx.Err(); err != nil {
			return stopped(err) // the last moment to stop: the lock is not taken
		}
		err := r.updateRef(req.TargetBranch, p.old, p.new)
		switch {
		case err == nil:
			return p.result, nil
		case errors.Is(err, reflock.ErrLocked):
			// Someone else is writing the branch: keep the plan (the update
			// re-checks the old value under the lock) and wait a little.
			call(r.hooks.lockBusy)
			select {
			case <-time.After(r.retry.wait(attempt)):
			case <-ctx.Done():
				return stopped(ctx.Err())
			}
		case errors.Is(err, reflock.ErrChanged):
			p = nil // lost a race: plan again on the new target head
		default:
			return Result{}, fmt.Errorf("merge %s into %s: %w", req.PRID, req.TargetBranch, err)
		}
		last = err
	}
	return Result{}, fmt.Errorf("merge %s into %s: %w after %d attempts: %w",
		req.PRID, req.TargetBranch, ErrTargetBusy, r.retry.attempts, last)
}

// plan is a merge computed against one value of the target ref, with all
// its objects written: what is left is moving the ref from old to new.
type plan struct {
	old, new plumbing.Hash
	result   Result // AlreadyMerged: nothing to move
}

func (r *Repo) plan(ctx context.Context, req MergeRequest) (*plan, error) {
	targetHash, err := gitobj.ReadRef(r.dir, req.TargetBranch)
	if err != nil {
		return nil, fmt.Errorf("target branch: %w", err)
	}
	target, err := r.store.Commit(targetHash)
	if err != nil {
		return nil, fmt.Errorf("target head: %w", err)
	}
	headHash := plumbing.NewHash(req.HeadSHA)
	head, err := r.store.Commit(headHash)
	if err != nil && !errors.Is(err, gitobj.ErrObjectMissing) {
		return nil, fmt.Errorf("PR head: %w", err)
	}
	var bases []*object.Commit
	if head != nil {
		if bases, err = r.history.MergeBases(ctx, target, head); err != nil {
			return nil, err
		}
	}
	done, ok, err := r.alreadyMerged(ctx, req, target, head, bases)
	if err != nil {
		return nil, err
	}
	if ok {
		return &plan{result: done}, nil
	}

	srcHash, err := gitobj.ReadRef(r.dir, req.SourceBranch)
	if err != nil {
		return nil, fmt.Errorf("source branch: %w", err)
	}
	if srcHash != headHash {
		return nil, fmt.Errorf("source branch %s is at %s, not %s: %w", req.SourceBranch, srcHash, headHash, ErrHeadMoved)
	}
	if head == nil {
		return nil, fmt.Errorf("PR head: %w", gitobj.ErrObjectMissing)
	}
	if req.Strategy == StrategyFastForward {
		return r.planFastForward(ctx, target, head, bases)
	}
	return r.planMerge(ctx, req, target, head, bases)
}

func (r *Repo) planFastForward(ctx context.Context, target, head *object.Commit, bases []*object.Commit) (*plan, error) {
	if len(bases) != 1 || bases[0].Hash != target.Hash {
		return nil, fmt.Errorf("target head %s is not an ancestor of %s: %w", target.Hash, head.Hash, ErrNotFastForward)
	}
	changed, err := r.engine().ChangedPaths(ctx, target.TreeHash, head.TreeHash)
	if err != nil {
		return nil, err
	}
	return &plan{old: target.Hash, new: head.Hash, result: Result{
		MergeSHA: head.Hash.String(), BaseSHA: target.Hash.String(), ChangedPaths: changed,
	}}, nil
}

func (r *Repo) planMerge(ctx context.Context, req MergeRequest, target, head *object.Commit, bases []*object.Commit) (*plan, error) {
	if len(bases) == 0 {
		return nil, &ConflictError{Reason: "the PR head and the target branch have no common history"}
	}
	e := r.engine() // holds the virtual base's objects, if any
	baseTree, err := e.BaseTree(ctx, bases, target.TreeHash)
	if err != nil {
		return nil, err
	}
	tree, trees, err := e.MergeTrees(ctx, baseTree, target.TreeHash, head.TreeHash, target.TreeHash)
	if err != nil {
		return nil, err
	}
	c := &object.Commit{
		Author:    object.Signature{Name: req.Author.Name, Email: req.Author.Email, When: req.When},
		Committer: object.Signature{Name: req.Committer.Name, Email: req.Committer.Email, When: req.When},
		TreeHash:  tree,
	}
	if req.Strategy == StrategySquash {
		exclude := bases[0].Hash
		if len(bases) > 1 { // what no merge base reaches: what the target does not
			exclude = target.Hash
		}
		subjects, more, err := r.squashedSubjects(ctx, head.Hash, exclude)
		if err != nil {
			return nil, err
		}
		c.Message = squashMessage(req, subjects, more)
		c.ParentHashes = []plumbing.Hash{target.Hash}
	} else {
		c.Message = mergeMessage(req)
		c.ParentHashes = []plumbing.Hash{target.Hash, head.Hash}
	}
	obj, err := r.store.EncodeCommit(c)
	if err != nil {
		return nil, err
	}
	// Trees first, then the commit: never an object pointing at a missing one.
	if err := r.store.WriteObjects(append(trees, obj)...); err != nil {
		return nil, err
	}
	// The merge is the target's next head: the next merge into the branch
	// starts from it.
	c.Hash = obj.Hash()
	r.store.KeepCommit(c)
	r.history.Added(ctx, c)
	changed, err := e.ChangedPaths(ctx, target.TreeHash, tree)
	if err != nil {
		return nil, err
	}
	return &plan{old: target.Hash, new: obj.Hash(), result: Result{
		MergeSHA: obj.Hash().String(), BaseSHA: target.Hash.String(), ChangedPaths: changed,
	}}, nil
}
