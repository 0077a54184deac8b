package gitlog

import (
	"container/heap"
	"context"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Flags a commit carries in a walk: reached from the tip, from a base.
const (
	fromTip  = 1
	fromBase = 2
)

// slop is how many commits the walk reads after only base-reachable
// commits are left in its queue, as git does, for clock skew: a commit
// dated earlier than its parent must not end the walk too soon.
const slop = 5

// walk computes `git rev-list tip ^base...` by painting commits newest
// first (by committer time): a commit reachable from a base is excluded,
// and the walk stops once nothing in the queue is reachable from the tip
// alone — so it reads the commits of the merge and the few around its
// fork point, not the whole history.
type walk struct {
	ctx   context.Context
	get   func(plumbing.Hash) (*object.Commit, error)
	limit int // commits read at most

	flags map[plumbing.Hash]uint8
	queue byTime
	read  int
}

// only returns the commits reachable from tip and not from any of bases,
// newest first. truncated reports that the walk hit its limit (the result
// may then lack commits, or hold some a longer walk would exclude).
func (w *walk) only(tip *object.Commit, bases []*object.Commit) (commits []*object.Commit, truncated bool, err error) {
	w.flags = map[plumbing.Hash]uint8{}
	w.push(tip, fromTip)
	for _, b := range bases {
		w.push(b, fromBase)
	}
	var order []*object.Commit
	left := slop
	for w.queue.Len() > 0 {
		if !w.interesting() {
			if left--; left < 0 {
				break
			}
		} else {
			left = slop
		}
		if w.read >= w.limit {
			truncated = true
			break
		}
		if err := w.ctx.Err(); err != nil {
			return nil, false, err
		}
		c := heap.Pop(&w.queue).(*object.Commit)
		f := w.flags[c.Hash]
		if f&fromBase == 0 {
			order = append(order, c)
		}
		for _, p := range c.ParentHashes {
			if w.flags[p]|f == w.flags[p] {
				continue // nothing new to tell p
			}
			pc, err := w.commit(p)
			if err != nil {
				return nil, false, err
			}
			w.push(pc, f)
		}
	}
	// A commit may have been reached from a base after it was taken.
	seen := map[plumbing.Hash]bool{}
	for _, c := range order {
		if w.flags[c.Hash]&fromBase == 0 && !seen[c.Hash] {
			seen[c.Hash] = true
			commits = append(commits, c)
		}
	}
	return commits, truncated, nil
}

func (w *walk) commit(h plumbing.Hash) (*object.Commit, error) {
	w.read++
	return w.get(h)
}

func (w *walk) push(c *object.Commit, f uint8) {
	w.flags[c.Hash] |= f
	heap.Push(&w.queue, c)
}

// interesting reports whether a queued commit is still reachable from the
// tip alone.
func (w *walk) interesting() bool {
	for _, c := range w.queue {
		if w.flags[c.Hash]&fromBase == 0 {
			return true
		}
	}
	return false
}

// byTime is a heap of commits, newest committer time first (ties by hash,
// so the order is deterministic).
type byTime []*object.Commit

func (h byTime) Len() int { return len(h) }
func (h byTime) Less(i, j int) bool {
	ti, tj := h[i].Committer.When, h[j].Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return h[i].Hash.String() < h[j].Hash.String()
}
func (h byTime) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *byTime) Push(x any)   { *h = append(*h, x.(*object.Commit)) }
func (h *byTime) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
