package gitlog

import (
	"container/heap"
	"context"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/platform/revwalk"
)

// maxClosure bounds the commits one repository's closure holds (about 50
// bytes each, so at most about 1 MB per open repository, 32 MB in all): a
// repository with a longer history is read by the walk alone.
const maxClosure = 20000

// closure is every commit reachable from head, kept between calls on one
// repository so that a merge's commits are found without reading the
// target's history again. A PR forked long ago (in W2 every PR forks from
// the root) makes the walk (platform/revwalk) read all of the target's history
// since the fork — a cost that grows with every merge; with the closure of
// the previous merge, a call reads only what is new since then.
//
// The set is closed under parents, which makes it cheap to keep exact:
// a walk down from a commit that stops at the set's members finds what
// the commit reaches beyond the set, and it meets head exactly when head
// is an ancestor of the commit (the first member on a path from the commit
// to head is an ancestor of head and a descendant of it: head itself).
// Only then is the set plus what the walk found everything the commit
// reaches. A commit never changes, so the set never goes stale; a commit
// deleted from the repository does not matter, as every call reads its
// tip from the repository first.
type closure struct {
	head plumbing.Hash
	set  map[plumbing.Hash]struct{}
}

// fromClosure answers rev-list tip ^base from rp's closure, which it builds,
// extends or moves to tip on the way; ok false when it cannot (base does
// not descend from the closure's head, or the history is over maxClosure):
// the caller walks instead. Callers hold rp.mu.
func (r *Reader) fromClosure(ctx context.Context, rp *repo, tip, base *object.Commit) (commits []*object.Commit, truncated, ok bool, err error) {
	if rp.noClosure {
		return nil, false, false, nil
	}
	get := func(h plumbing.Hash) (*object.Commit, error) { return r.commit(rp, h) }
	cl := rp.closure
	if cl == nil {
		cl = &closure{head: base.Hash, set: map[plumbing.Hash]struct{}{}}
		if _, _, err := below(ctx, get, base, cl.set, plumbing.ZeroHash, r.maxClosure); err != nil {
			return nil, false, false, r.giveUp(ctx, rp, err)
		}
	} else if cl.head != base.Hash {
		// What base reaches beyond the set, and whether it descends from head.
		found, met, err := below(ctx, get, base, cl.set, cl.head, r.maxClosure-len(cl.set))
		if err != nil {
			return nil, false, false, r.giveUp(ctx, rp, err)
		}
		if !met {
			// base is not a descendant of head (events out of merge order,
			// another target branch): the set holds commits base does not
			// reach. Keep it for the calls that follow head; walk this one.
			return nil, false, false, nil
		}
		for _, c := range found {
			cl.set[c.Hash] = struct{}{}
		}
		cl.head = base.Hash
	}
	rp.closure = cl
	// The set is now all base reaches: tip's commits are those below tip
	// outside it, newest first as the walk gives them.
	commits, truncated, err = newest(ctx, get, tip, cl.set, MaxWalk)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, false, err
		}
		return nil, false, false, nil // the walk reads it again and says what is wrong
	}
	if !truncated && len(cl.set)+len(commits) <= r.maxClosure {
		// The next merge onto this target has tip as its base.
		for _, c := range commits {
			cl.set[c.Hash] = struct{}{}
		}
		cl.head = tip.Hash
	}
	return commits, truncated, true, nil
}

// giveUp says what a call whose closure read failed with err returns: the
// context's end (the closure, which below leaves as it was, is kept), or
// nil after dropping the closure — the walk serves this repository from
// now on, its history too long to keep (errLimit) or a commit of it
// unreadable (the walk may not need that commit; if it does, it says so).
func (r *Reader) giveUp(ctx context.Context, rp *repo, err error) error {
	if ctx.Err() != nil {
		return err
	}
	rp.closure, rp.noClosure = nil, true
	return nil
}

// errLimit is below's answer when it would add more than its limit.
var errLimit = errors.New("closure over its limit")

// below adds to set every commit reachable from c that the set does not
// hold (not going past its members), and returns them and whether head was
// among the members met (or c itself). It fails with errLimit past limit
// new commits.
func below(ctx context.Context, get func(plumbing.Hash) (*object.Commit, error), c *object.Commit, set map[plumbing.Hash]struct{}, head plumbing.Hash, limit int) (found []*object.Commit, met bool, err error) {
	if c.Hash == head {
		return nil, true, nil
	}
	if _, ok := set[c.Hash]; ok {
		return nil, false, nil
	}
	seen := map[plumbing.Hash]struct{}{c.Hash: {}}
	stack := []*object.Commit{c}
	for len(stack) > 0 {
		if len(found)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(found) == limit {
			return nil, false, errLimit
		}
		found = append(found, c)
		for _, p := range c.ParentHashes {
			if p == head {
				met = true
			}
			pc, err := unreached(get, p, set, seen)
			if err != nil {
				return nil, false, err
			}
			if pc != nil {
				stack = append(stack, pc)
			}
		}
	}
	if head == plumbing.ZeroHash {
		// Building: the set is everything c reaches.
		for _, c := range found {
			set[c.Hash] = struct{}{}
		}
	}
	return found, met, nil
}

// newest returns the commits reachable from tip outside set (closed under
// parents), newest committer time first in the order revwalk's walk gives
// them: popped from a queue by time as they are reached. truncated: more
// than limit were found.
func newest(ctx context.Context, get func(plumbing.Hash) (*object.Commit, error), tip *object.Commit, set map[plumbing.Hash]struct{}, limit int) (commits []*object.Commit, truncated bool, err error) {
	if _, ok := set[tip.Hash]; ok {
		return nil, false, nil // a merge already in the target: nothing new
	}
	seen := map[plumbing.Hash]struct{}{tip.Hash: {}}
	q := revwalk.Queue{tip}
	for q.Len() > 0 {
		if len(commits) == limit {
			return commits, true, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		c := heap.Pop(&q).(*object.Commit)
		commits = append(commits, c)
		for _, p := range c.ParentHashes {
			pc, err := unreached(get, p, set, seen)
			if err != nil {
				return nil, false, err
			}
			if pc != nil {
				heap.Push(&q, pc)
			}
		}
	}
	return commits, false, nil
}

// unreached reads parent p with get and marks it seen, unless a walk has
// already reached it (it is in set, or seen): then it returns nil.
func unreached(get func(plumbing.Hash) (*object.Commit, error), p plumbing.Hash, set, seen map[plumbing.Hash]struct{}) (*object.Commit, error) {
	if _, ok := set[p]; ok {
		return nil, nil
	}
	if _, ok := seen[p]; ok {
		return nil, nil
	}
	seen[p] = struct{}{}
	return get(p)
}
