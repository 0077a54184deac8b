package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Criss-cross histories. When the target and the PR head have several
// best common ancestors, git's merge (merge-ort) first merges those merge
// bases into a virtual base — recursively: their own merge bases are
// merged the same way — and then merges the two sides against it. So does
// this file, with the same tree merge.
//
// Where merging the bases conflicts, git writes the conflicted contents,
// markers included, into the virtual base (and resolves some conflicts its
// own way at that depth: a binary file takes the base's version). That is
// not reproduced: such a history is a conflict, with a reason naming the
// case. So are more than two merge bases (git merges them pairwise, in an
// order this code does not try to match) and recursions deeper than
// maxVirtualDepth.

const maxVirtualDepth = 8

// baseTree returns the tree a merge whose merge bases are bases merges
// against. The virtual base's new objects are kept in r.overlay, readable
// for the merge and never written: no result of the merge refers to them
// (a path is taken from the base only where both sides have it alike).
func (r *repo) baseTree(ctx context.Context, bases []*object.Commit, attrRoot plumbing.Hash, depth int) (plumbing.Hash, error) {
	switch {
	case len(bases) == 0:
		return plumbing.ZeroHash, nil // unrelated bases merge against the empty tree, as in git
	case len(bases) == 1:
		return bases[0].TreeHash, nil
	case len(bases) > 2:
		return plumbing.ZeroHash, &ConflictError{Reason: fmt.Sprintf(
			"criss-cross history with %d merge bases (merging more than two merge bases is not supported)", len(bases))}
	case depth >= maxVirtualDepth:
		return plumbing.ZeroHash, &ConflictError{Reason: fmt.Sprintf(
			"criss-cross history nested more than %d levels deep (not supported)", maxVirtualDepth)}
	}
	// git merges the bases oldest first; for a clean merge of two the
	// order does not change the tree.
	bases = append([]*object.Commit(nil), bases...)
	sortBasesByDate(bases)
	a, b := bases[0], bases[1]
	inner, err := r.bases.MergeBases(ctx, a, b)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	innerBase, err := r.baseTree(ctx, inner, attrRoot, depth+1)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, objs, err := r.mergeTrees(ctx, innerBase, a.TreeHash, b.TreeHash, attrRoot)
	var ce *ConflictError
	if errors.As(err, &ce) {
		return plumbing.ZeroHash, &ConflictError{Reason: fmt.Sprintf(
			"criss-cross history: its 2 merge bases %s and %s do not merge cleanly (git would merge against a base holding conflict markers; not supported): %s",
			a.Hash, b.Hash, ce.Reason)}
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if r.overlay == nil {
		r.overlay = map[plumbing.Hash]plumbing.EncodedObject{}
	}
	for _, o := range objs {
		r.overlay[o.Hash()] = o
	}
	return tree, nil
}

// sortBasesByDate orders merge bases oldest first (ties by hash), for
// deterministic reasons and merges.
func sortBasesByDate(bases []*object.Commit) {
	sort.SliceStable(bases, func(i, j int) bool {
		a, b := bases[i].Committer.When, bases[j].Committer.When
		if !a.Equal(b) {
			return a.Before(b)
		}
		return bases[i].Hash.String() < bases[j].Hash.String()
	})
}
