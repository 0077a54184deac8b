package gitrepo

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// History walks. They are exact (they follow parents, not commit dates) and
// O(history) in the worst case — fine for the repositories prsaga serves;
// a commit-graph would be the next step for very large ones.

// maxTrailerSearch bounds the already-merged search: how many commits of
// the target's history (newest first, breadth-first) are read.
const maxTrailerSearch = 10000

// maxSquashWalk bounds the walk collecting the subjects of squashed commits.
const maxSquashWalk = 10000

// walk visits the commits reachable from start breadth-first, each once,
// not following the parents of a commit for which stop is true (the stop
// commit itself is visited), and reads at most max commits. visit returns
// true to end the walk.
func (r *Repo) walk(start plumbing.Hash, stop func(plumbing.Hash) bool, max int, visit func(*object.Commit) bool) error {
	seen := map[plumbing.Hash]bool{start: true}
	queue := []plumbing.Hash{start}
	for n := 0; len(queue) > 0 && n < max; n++ {
		c, err := r.commit(queue[0])
		if err != nil {
			return err
		}
		queue = queue[1:]
		if visit(c) {
			return nil
		}
		if stop(c.Hash) {
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return nil
}

// findTrailerCommit looks for a commit carrying "Prsaga-PR: <prID>" among
// the commits reachable from target, not walking past the merge bases with
// the PR head (the PR cannot have been merged before it forked), newest
// first. With no bases (PR head unknown, unrelated histories) the walk is
// only bounded by maxTrailerSearch. Any commit with the trailer in the
// target's history means the PR was merged: a PR is merged at most once.
//
// The in-memory graph's trailer index answers most searches without a
// walk: a PR no commit of the target's history carries the trailer of is
// not merged, whatever the bases.
func (r *Repo) findTrailerCommit(target plumbing.Hash, bases []*object.Commit, prID string) (*object.Commit, error) {
	if !r.trailerCandidates(target, prID) {
		return nil, nil
	}
	isBase := map[plumbing.Hash]bool{}
	for _, b := range bases {
		isBase[b.Hash] = true
	}
	var found *object.Commit
	err := r.walk(target, func(h plumbing.Hash) bool { return isBase[h] }, maxTrailerSearch, func(c *object.Commit) bool {
		if !isBase[c.Hash] && hasTrailer(c.Message, TrailerPR, prID) {
			found = c
			return true
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("search %s trailer: %w", TrailerPR, err)
	}
	return found, nil
}

// squashedSubjects returns the subjects of the commits a squash of head
// onto a target with merge base base folds in (`git log base..head`), oldest
// first, at most maxSquashSubjects, plus how many more there were.
func (r *Repo) squashedSubjects(head, base plumbing.Hash) ([]string, int, error) {
	commits, err := r.revList(head, base, maxSquashWalk)
	if err != nil {
		return nil, 0, fmt.Errorf("squashed commits: %w", err)
	}
	sort.SliceStable(commits, func(i, j int) bool { // oldest first
		return commits[i].Committer.When.Before(commits[j].Committer.When)
	})
	var subjects []string
	for _, c := range commits[:min(len(commits), maxSquashSubjects)] {
		subjects = append(subjects, subject(c.Message))
	}
	return subjects, len(commits) - len(subjects), nil
}
