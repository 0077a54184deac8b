package revwalk

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

// slop is how many commits a walk reads on once only base-reachable
// commits are left in its queue, against clock skew: a commit dated
// earlier than its parent must not end the walk too soon. git's rev-list
// uses the same margin (SLOP in revision.c).
const slop = 5

// ctxEvery is how many commits a walk takes between two checks of its
// context (the first is checked): a check per commit would cost more than
// reading a cached one.
const ctxEvery = 256

// Walk reads commits for Only, bounded. Not safe for concurrent use; a
// Walk serves one listing (its count of reads goes on).
type Walk struct {
	// Get reads a commit: from the caller's cache or its repository.
	Get func(plumbing.Hash) (*object.Commit, error)
	// Limit bounds Reads: Only stops there and reports the list truncated.
	Limit int
	// Reads counts the commits read: through Commit, by Only, and any a
	// caller read elsewhere and adds (a base read from the repository).
	Reads int
}

// Commit reads h with Get and counts it against Limit: for the tip and
// bases a caller hands to Only.
func (w *Walk) Commit(h plumbing.Hash) (*object.Commit, error) {
	w.Reads++
	return w.Get(h)
}

// Only returns the commits reachable from tip and not from any of bases,
// newest committer time first — what `git rev-list tip ^base…` lists,
// unless a commit dated (much) earlier than an ancestor of it stops the
// walk too soon, as it does git's. truncated reports that the walk hit
// Limit: the list may then lack commits, or hold some a longer walk would
// exclude. It paints commits newest first: a commit a base reaches is
// excluded, and the walk stops once nothing in its queue is reachable from
// the tip alone.
func (w *Walk) Only(ctx context.Context, tip *object.Commit, bases ...*object.Commit) (commits []*object.Commit, truncated bool, err error) {
	p := &paint{flags: map[plumbing.Hash]uint8{}, queued: map[plumbing.Hash]int{}}
	p.push(tip, fromTip)
	for _, b := range bases {
		p.push(b, fromBase)
	}
	var order []*object.Commit
	left := slop
	for n := 0; p.queue.Len() > 0; n++ {
		if p.tipOnly == 0 {
			if left--; left < 0 {
				break
			}
		} else {
			left = slop
		}
		if w.Reads >= w.Limit {
			truncated = true
			break
		}
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		c := heap.Pop(&p.queue).(*object.Commit)
		f := p.flags[c.Hash]
		p.queued[c.Hash]--
		if f&fromBase == 0 {
			p.tipOnly--
			order = append(order, c)
		}
		for _, h := range c.ParentHashes {
			if p.flags[h]|f == p.flags[h] {
				continue // nothing new to tell the parent
			}
			pc, err := w.Commit(h)
			if err != nil {
				return nil, false, err
			}
			p.push(pc, f)
		}
	}
	// A commit may have been reached from a base after it was taken.
	seen := map[plumbing.Hash]bool{}
	for _, c := range order {
		if p.flags[c.Hash]&fromBase == 0 && !seen[c.Hash] {
			seen[c.Hash] = true
			commits = append(commits, c)
		}
	}
	return commits, truncated, nil
}

// paint is one walk's marks and queue.
type paint struct {
	flags map[plumbing.Hash]uint8
	queue Queue
	// queued counts each commit's entries in the queue, and tipOnly the
	// entries of commits not (yet) reached from a base: the walk asks after
	// every step whether any is left, and a scan of the queue made that
	// quadratic in the history between the tip and its fork point (in the
	// W2 benchmark every PR forks from the root: all of main's history).
	queued  map[plumbing.Hash]int
	tipOnly int
}

func (p *paint) push(c *object.Commit, f uint8) {
	old := p.flags[c.Hash]
	p.flags[c.Hash] = old | f
	if old&fromBase == 0 && f&fromBase != 0 {
		p.tipOnly -= p.queued[c.Hash] // its queued entries are a base's now
	}
	p.queued[c.Hash]++
	if (old|f)&fromBase == 0 {
		p.tipOnly++
	}
	heap.Push(&p.queue, c)
}
