package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// Engine is the three-way merge of one repository's trees, over its
// objects: it reads trees and blobs, and returns the new objects of a
// clean merge for its caller to write; it never writes an object or a
// ref. One Engine serves one merge (or one check): the objects of a
// criss-cross merge's virtual base stay in its overlay, readable by that
// merge only. Not safe for concurrent use.
//
// Every walk checks its context — per tree level, per file merged, in the
// line diffs of large files — and returns its error, wrapped, once it is
// cancelled.
type Engine struct {
	r *repo
}

// Bases finds the best common ancestors of two commits (`git merge-base
// --all`): package history's History.
type Bases interface {
	MergeBases(ctx context.Context, a, b *object.Commit) ([]*object.Commit, error)
}

// repo is the engine's view of the repository: its objects, its merge
// bases, and the objects of a virtual base (virtualbase.go).
type repo struct {
	s     *gitobj.Store
	bases Bases
	// overlay holds objects made by the merge and read back without being
	// written: a criss-cross merge's virtual base.
	overlay map[plumbing.Hash]plumbing.EncodedObject
	// cfg is the repository's config, read once per engine (one merge):
	// the merge asks it up to four questions, and go-git opens and parses
	// the file for each.
	cfg *config.Config
}

// config is the repository's config as the merge first read it.
func (r *repo) config() (*config.Config, error) {
	if r.cfg == nil {
		c, err := r.s.Config()
		if err != nil {
			return nil, err
		}
		r.cfg = c
	}
	return r.cfg, nil
}

// New is an engine over the objects of s, finding merge bases with bases.
func New(s *gitobj.Store, bases Bases) *Engine {
	return &Engine{r: &repo{s: s, bases: bases}}
}

// MergeTrees merges three root trees (base, ours = the target's, theirs =
// the PR's) with the merge attributes of tree attrRoot (the target's; see
// attributes.go). It returns the result tree's hash (the empty tree's if
// nothing is left) and the new objects to write, children before parents,
// or a *ConflictError.
func (e *Engine) MergeTrees(ctx context.Context, base, ours, theirs, attrRoot plumbing.Hash) (plumbing.Hash, []plumbing.EncodedObject, error) {
	return e.r.mergeTrees(ctx, base, ours, theirs, attrRoot)
}

// BaseTree returns the tree a merge whose merge bases are bases merges
// against: the one base's, the empty tree without one, or a virtual base
// for two (virtualbase.go); a *ConflictError for histories that are not
// merged.
func (e *Engine) BaseTree(ctx context.Context, bases []*object.Commit, attrRoot plumbing.Hash) (plumbing.Hash, error) {
	return e.r.baseTree(ctx, bases, attrRoot, 0)
}

// MaxChangedPaths caps ChangedPaths, like every list in an event.
const MaxChangedPaths = contracts.MaxListItems

// ChangedPaths lists the files that differ between two trees, sorted, at
// most MaxChangedPaths of them.
func (e *Engine) ChangedPaths(ctx context.Context, from, to plumbing.Hash) ([]string, error) {
	return e.r.changedPaths(ctx, from, to)
}

// LineStyle is how a line merge resolves conflicting regions.
type LineStyle = lineStyle

// The line styles of MergeLines.
const (
	LineStyleText  = lineStyleText
	LineStyleUnion = lineStyleUnion
	LineStyleDiff3 = lineStyleDiff3
)

// MergeLines merges three texts line by line as a file both sides changed
// is merged: the merged text, or why there is none (a conflict).
func MergeLines(base, ours, theirs string, style LineStyle) (merged, why string) {
	return mergeLines(context.Background(), base, ours, theirs, style)
}

// SplitLines splits a text into lines, each with its newline (the last
// one may lack it).
func SplitLines(s string) []string { return splitLines(s) }

// MaxLineMergeDiff bounds the lines a line merge aligns (filemerge.go).
const MaxLineMergeDiff = maxLineMergeDiff

// ConflictError is the ErrConflict a merge returns: the conflicting paths
// (sorted, at most MaxConflictPaths) and a human sentence saying why.
// Paths is empty when the histories themselves cannot be merged (no merge
// base; more than two merge bases, or two that do not merge cleanly).
type ConflictError struct {
	Paths  []string
	Reason string
}

// MaxConflictPaths caps ConflictError.Paths, like every list in an event.
const MaxConflictPaths = 1000

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("merge conflict: ")
	b.WriteString(e.Reason)
	if len(e.Paths) > 0 {
		const show = 5
		shown := e.Paths[:min(len(e.Paths), show)]
		fmt.Fprintf(&b, " (%d paths: %s", len(e.Paths), strings.Join(shown, ", "))
		if len(e.Paths) > show {
			b.WriteString(", …")
		}
		b.WriteString(")")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrConflict) true for a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ErrConflict: the merge cannot be done without a human; the error is a
// *ConflictError naming the paths.
var ErrConflict = errors.New("merge conflict")

// canceled wraps a cancelled context's error with where the merge stopped.
func canceled(ctx context.Context, where string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("merge stopped at %s: %w", where, err)
	}
	return nil
}
