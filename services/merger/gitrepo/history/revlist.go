package history

import (
	"container/heap"
	"context"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// revListSlop is how many commits revList reads on after everything left
// to read is reachable from the excluded commit, against clock skew: git's
// own rev-list uses the same margin (SLOP in revision.c).
const revListSlop = 5

// RevList returns the commits reachable from head but not from exclude —
// `git rev-list exclude..head` — newest first by committer date, reading at
// most max commits.
//
// Like git, it walks both histories together, newest commit first, marking
// what exclude reaches, and stops once every commit left to read is marked:
// its cost is the PR's commits and the target's commits since the fork, not
// the length of the history. The price, as in git, is that a commit dated
// (much) earlier than an ancestor of it can stop the walk too soon; this
// only feeds a squash commit's message, never a tree or a ref.
func (r *History) RevList(ctx context.Context, head, exclude plumbing.Hash, max int) ([]*object.Commit, error) {
	const (
		fromHead = 1 << iota
		excluded
	)
	flags := map[plumbing.Hash]uint8{head: fromHead, exclude: excluded}
	read := map[plumbing.Hash]uint8{} // the flags a commit had when its parents were queued
	q := &commitQueue{}
	for _, h := range []plumbing.Hash{head, exclude} {
		c, err := r.s.Commit(h)
		if err != nil {
			return nil, err
		}
		heap.Push(q, c)
	}
	var found []*object.Commit
	slop := revListSlop
	for n := 0; q.Len() > 0 && n < max; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		c := heap.Pop(q).(*object.Commit)
		f := flags[c.Hash]
		if read[c.Hash] == f {
			continue // already read with these marks
		}
		if f&excluded == 0 && read[c.Hash] == 0 {
			found = append(found, c)
		}
		read[c.Hash] = f
		for _, p := range c.ParentHashes {
			if flags[p]|f == flags[p] {
				continue
			}
			flags[p] |= f
			pc, err := r.s.Commit(p)
			if err != nil {
				return nil, err
			}
			heap.Push(q, pc)
		}
		if !q.allExcluded(flags, excluded) {
			slop = revListSlop
		} else if slop--; slop < 0 {
			break
		}
	}
	out := found[:0]
	for _, c := range found {
		if flags[c.Hash]&excluded == 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// commitQueue is a max-heap of commits by committer date (then hash, so
// that the order is deterministic).
type commitQueue []*object.Commit

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	a, b := q[i].Committer.When, q[j].Committer.When
	if !a.Equal(b) {
		return a.After(b)
	}
	return q[i].Hash.String() > q[j].Hash.String()
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(*object.Commit)) }
func (q *commitQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// allExcluded reports whether every queued commit is marked excluded.
func (q commitQueue) allExcluded(flags map[plumbing.Hash]uint8, excluded uint8) bool {
	for _, c := range q {
		if flags[c.Hash]&excluded == 0 {
			return false
		}
	}
	return true
}
