package engine

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Renames. git's merge detects renames on each side (base→ours and
// base→theirs, added paths paired with deleted ones by content). For a path
// the tree merge resolves cleanly this only changes the outcome in one
// case: the path is deleted on both sides, and one side's deletion is really
// a rename — git then reports rename/delete or rename/rename(1to2) where a
// path-by-path merge sees nothing wrong. (A file deleted on one side only
// and changed on the other is a conflict here anyway; additions into a
// directory removed on one side are handled by treeMerge.)
//
// So for every file deleted on both sides, any added file that git could
// pair with it makes that path a conflict: the same blob (an exact rename),
// or sizes close enough for git's default 50% similarity (git skips pairs
// whose size difference exceeds half of the larger size; contents are not
// compared here, which only errs towards conflicts).

// maxRenamePairs bounds the pairs compared; beyond it, every file deleted
// on both sides is reported as a conflict rather than checked.
const maxRenamePairs = 1 << 20

func (m *treeMerge) checkRenames(base, ours, theirs plumbing.Hash) error {
	sl := m.sides // computed by findExactRenames
	if err := m.nameRenames(base, sl); err != nil {
		return err
	}
	// Deleted on both sides — including inside subtrees both sides changed
	// alike, which the tree merge never opens.
	deletedByTheirs := map[string]bool{}
	for _, d := range sl.del[1] {
		deletedByTheirs[d.path] = true
	}
	var deleted []pathEntry
	for _, d := range sl.del[0] {
		if deletedByTheirs[d.path] {
			deleted = append(deleted, d)
		}
	}
	if len(deleted) == 0 {
		return nil
	}
	var added []pathEntry
	for _, ours := range []bool{true, false} {
		add, err := sl.added(ours)
		if err != nil {
			return err
		}
		added = append(added, add...)
	}
	if len(added) == 0 {
		return nil
	}
	if len(deleted)*len(added) > maxRenamePairs {
		for _, d := range deleted {
			m.conflict(d.path, "deleted on both sides while many files were added (renames not ruled out)")
		}
		return nil
	}
	sizes := map[plumbing.Hash]int64{}
	for _, d := range deleted {
		for _, a := range added {
			maybe, err := m.maybeRename(d.e, a.e, sizes)
			if err != nil {
				return err
			}
			if maybe {
				m.conflict(d.path, fmt.Sprintf("deleted on both sides, and %s may be its new name (renames are not merged)", a.path))
				break
			}
		}
	}
	return nil
}

// sideLists are the files each side (0 ours, 1 theirs) deleted, with
// their base versions, and — asked for only when a side deleted something
// or a conflict names its deletion, and then computed once — the files it
// added. A side that deleted nothing pairs nothing: W2's target adds a file
// per merged PR and deletes none, and listing its additions was the cost of
// a merge that grew with the target's root tree.
type sideLists struct {
	ctx       context.Context
	r         *repo
	base      plumbing.Hash
	tree      [2]plumbing.Hash
	del, add  [2][]pathEntry
	addListed [2]bool
}

func (r *repo) sideLists(ctx context.Context, base, ours, theirs plumbing.Hash) (*sideLists, error) {
	sl := &sideLists{ctx: ctx, r: r, base: base, tree: [2]plumbing.Hash{ours, theirs}}
	for i, tree := range sl.tree {
		if err := r.deletedFiles(ctx, "", base, tree, &sl.del[i]); err != nil {
			return nil, fmt.Errorf("rename check: %w", err)
		}
	}
	return sl, nil
}

// added returns the files ours (or theirs) added, relative to the base.
func (sl *sideLists) added(ours bool) ([]pathEntry, error) {
	i := sideIndex(ours)
	if !sl.addListed[i] {
		err := sl.r.diffTrees(sl.ctx, sl.base, sl.tree[i], func(p string, from, to entry) bool {
			if !from.present() && to.present() {
				sl.add[i] = append(sl.add[i], pathEntry{p, to})
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("rename check: %w", err)
		}
		sl.addListed[i] = true
	}
	return sl.add[i], nil
}

// side is one side's deletions, its additions when it deleted anything,
// and the other side's tree.
func (sl *sideLists) side(ours bool) (renameSide, error) {
	i := sideIndex(ours)
	s := renameSide{del: sl.del[i], other: sl.tree[1-i], ours: ours}
	if len(s.del) > 0 {
		var err error
		if s.add, err = sl.added(ours); err != nil {
			return renameSide{}, err
		}
	}
	return s, nil
}

func sideIndex(ours bool) int {
	if ours {
		return 0
	}
	return 1
}

// deletedFiles appends to out the files of tree a (with their entries)
// that tree b does not have, or has a directory in place of, below dir:
// the deletions diffTrees reports from a to b, in the same order, from a
// walk of a's entries alone (b's other entries can only be additions).
func (r *repo) deletedFiles(ctx context.Context, dir string, a, b plumbing.Hash, out *[]pathEntry) error {
	if a == b || a.IsZero() {
		return nil
	}
	ta, tb, err := r.readPair(ctx, a, b)
	if err != nil {
		return err
	}
	for i, name := range ta.names {
		ea, eb := ta.ents[i], tb.byName[name]
		if ea == eb {
			continue
		}
		p := joinPath(dir, name)
		if ea.isDir() {
			var sub plumbing.Hash
			if eb.isDir() {
				sub = eb.hash
			}
			if err := r.deletedFiles(ctx, p, ea.hash, sub, out); err != nil {
				return err
			}
			continue
		}
		if !eb.present() || eb.isDir() {
			*out = append(*out, pathEntry{p, ea})
		}
	}
	return nil
}

// maybeRename reports whether git could pair deleted file d with added
// file a as a rename.
func (m *treeMerge) maybeRename(d, a entry, sizes map[plumbing.Hash]int64) (bool, error) {
	if d.hash == a.hash {
		return true, nil
	}
	if d.mode == filemode.Submodule || a.mode == filemode.Submodule {
		return false, nil // gitlinks have no content to compare
	}
	sd, err := m.blobSize(d.hash, sizes)
	if err != nil {
		return false, err
	}
	sa, err := m.blobSize(a.hash, sizes)
	if err != nil {
		return false, err
	}
	larger, delta := max(sd, sa), max(sd, sa)-min(sd, sa)
	return 2*delta <= larger, nil
}

func (m *treeMerge) blobSize(h plumbing.Hash, sizes map[plumbing.Hash]int64) (int64, error) {
	if s, ok := sizes[h]; ok {
		return s, nil
	}
	s, err := m.r.objectSize(h)
	if err != nil {
		return 0, fmt.Errorf("size of blob %s: %w", h, err)
	}
	sizes[h] = s
	return s, nil
}
