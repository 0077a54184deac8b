package revwalk

import (
	"bytes"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Queue is a heap (container/heap) of commits, newest committer time
// first: the order git's walks read history in. Ties go by hash, so that
// the order is deterministic (git breaks them by insertion order).
type Queue []*object.Commit

func (q Queue) Len() int { return len(q) }
func (q Queue) Less(i, j int) bool {
	ti, tj := q[i].Committer.When, q[j].Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	// The bytes order the same as their hex, without a string per compare.
	return bytes.Compare(q[i].Hash[:], q[j].Hash[:]) < 0
}
func (q Queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *Queue) Push(x any)   { *q = append(*q, x.(*object.Commit)) }
func (q *Queue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}
