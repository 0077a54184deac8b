package gitlog

import (
	"bytes"
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
	// queued counts each commit's entries in the queue, and tipOnly the
	// entries of commits not (yet) reached from a base: the walk asks after
	// every step whether any is left, and a scan of the queue made that
	// quadratic in the history between the merge and its fork point (in
	// W2, every PR forks from the root: all of main's history).
	queued  map[plumbing.Hash]int
	tipOnly int
}

// only returns the commits reachable from tip and not from any of bases,
// newest first. truncated reports that the walk hit its limit (the result
// may then lack commits, or hold some a longer walk would exclude).
func (w *walk) only(tip *object.Commit, bases []*object.Commit) (commits []*object.Commit, truncated bool, err error) {
	w.flags = map[plumbing.Hash]uint8{}
	w.queued = map[plumbing.Hash]int{}
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
		w.queued[c.Hash]--
		if f&fromBase == 0 {
			w.tipOnly--
		}
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
	old := w.flags[c.Hash]
	w.flags[c.Hash] = old | f
	if old&fromBase == 0 && f&fromBase != 0 {
		w.tipOnly -= w.queued[c.Hash] // its queued entries are a base's now
	}
	w.queued[c.Hash]++
	if (old|f)&fromBase == 0 {
		w.tipOnly++
	}
	heap.Push(&w.queue, c)
}

// interesting reports whether a queued commit is still reachable from the
// tip alone.
func (w *walk) interesting() bool { return w.tipOnly > 0 }

// byTime is a heap of commits, newest committer time first (ties by hash,
// so the order is deterministic).
type byTime []*object.Commit

func (h byTime) Len() int { return len(h) }
func (h byTime) Less(i, j int) bool {
	ti, tj := h[i].Committer.When, h[j].Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	// The bytes order the same as their hex, without a string per compare.
	return bytes.Compare(h[i].Hash[:], h[j].Hash[:]) < 0
}
func (h byTime) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *byTime) Push(x any)   { *h = append(*h, x.(*object.Commit)) }
func (h *byTime) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
