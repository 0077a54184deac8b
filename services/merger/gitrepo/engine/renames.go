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
	delOurs, addOurs, delTheirs, addTheirs := sl.delOurs, sl.addOurs, sl.delTheirs, sl.addTheirs
	if err := m.nameRenames(base, addOurs, addTheirs); err != nil {
		return err
	}
	// Deleted on both sides — including inside subtrees both sides changed
	// alike, which the tree merge never opens.
	deletedByTheirs := map[string]bool{}
	for _, d := range delTheirs {
		deletedByTheirs[d.path] = true
	}
	var deleted []pathEntry
	for _, d := range delOurs {
		if deletedByTheirs[d.path] {
			deleted = append(deleted, d)
		}
	}
	added := append(addOurs, addTheirs...)
	if len(deleted) == 0 || len(added) == 0 {
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

// sideChanges lists the files one side deleted (with their base versions)
// and added, relative to the base.
func (r *repo) sideChanges(ctx context.Context, base, side plumbing.Hash) (deleted []pathEntry, added []pathEntry, err error) {
	err = r.diffTrees(ctx, base, side, func(p string, from, to entry) bool {
		switch {
		case from.present() && !to.present():
			deleted = append(deleted, pathEntry{p, from})
		case !from.present() && to.present():
			added = append(added, pathEntry{p, to})
		}
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("rename check: %w", err)
	}
	return deleted, added, nil
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
