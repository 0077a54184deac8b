package engine

import (
	"path"

	"github.com/go-git/go-git/v5/plumbing"
)

// Exact renames merged with a change on the other side. When one side
// renamed a file without changing its contents and the other side changed
// the file in place, git's merge (merge-ort, with rename detection on by
// default) pairs the deletion and the addition by their identical blob and
// merges the change into the new name. This file does the same where the
// pairing is beyond doubt:
//
//   - the blob is not empty (git does not pair empty files) and is the
//     only file with that blob among the side's deletions and among its
//     additions, so that git's exact matching has one candidate each way;
//   - both are regular files, and so is the other side's changed file;
//   - the other side has nothing at the new name.
//
// The result: nothing at the old name, and at the new name the other
// side's contents with the modes merged. Renames with changed contents
// are paired by inexactrenames.go; everything else about renames is left
// to renames.go and the refusals there.

// renameFix is one such rename: at old nothing, at new the entry.
type renameFix struct {
	new   entry
	isNew bool
}

// findExactRenames fills m.fixes (by path) and m.fixDirs (the directories
// above a new name, which the tree merge must open).
func (m *treeMerge) findExactRenames(base, ours, theirs plumbing.Hash) error {
	sl, err := m.r.sideLists(m.ctx, base, ours, theirs)
	if err != nil {
		return err
	}
	m.sides = sl
	for _, ours := range []bool{true, false} {
		s, err := sl.side(ours)
		if err != nil {
			return err
		}
		if len(s.del) == 0 || len(s.add) == 0 {
			continue
		}
		count := map[plumbing.Hash]int{}
		for _, d := range s.del {
			count[d.e.hash]++
		}
		added := map[plumbing.Hash][]pathEntry{}
		for _, a := range s.add {
			added[a.e.hash] = append(added[a.e.hash], a)
		}
		for _, d := range s.del {
			as := added[d.e.hash]
			if count[d.e.hash] != 1 || len(as) != 1 || !d.e.isRegular() || !as[0].e.isRegular() {
				continue
			}
			if size, err := m.r.objectSize(d.e.hash); err != nil || size == 0 {
				if err != nil {
					return err
				}
				continue
			}
			changed, err := m.r.entryAt(s.other, d.path)
			if err != nil {
				return err
			}
			if !changed.isRegular() || changed == d.e {
				continue // deleted or not a file there too, or unchanged: the tree merge is right as it is
			}
			if at, err := m.r.entryAt(s.other, as[0].path); err != nil || at.present() {
				if err != nil {
					return err
				}
				continue
			}
			// The tree merge must reach the new name: every directory above
			// it a directory or nothing in the base and on the other side.
			if open, err := m.r.dirsOrAbsent(as[0].path, base, s.other); err != nil || !open {
				if err != nil {
					return err
				}
				continue
			}
			var mode = changed.mode
			var ok bool
			if s.ours {
				mode, ok = mergeModes(d.e.mode, as[0].e.mode, changed.mode)
			} else {
				mode, ok = mergeModes(d.e.mode, changed.mode, as[0].e.mode)
			}
			if !ok {
				continue
			}
			if m.fixes == nil {
				m.fixes, m.fixDirs = map[string]renameFix{}, map[string]bool{}
			}
			m.fixes[d.path] = renameFix{}
			m.fixes[as[0].path] = renameFix{new: entry{mode: mode, hash: changed.hash}, isNew: true}
			for dir := path.Dir(as[0].path); dir != "."; dir = path.Dir(dir) {
				m.fixDirs[dir] = true
			}
		}
	}
	return m.findInexactRenames(base, sl)
}

// dirsOrAbsent reports whether, in each tree, every directory above p is
// a directory or absent.
func (r *repo) dirsOrAbsent(p string, trees ...plumbing.Hash) (bool, error) {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		for _, t := range trees {
			e, err := r.entryAt(t, dir)
			if err != nil {
				return false, err
			}
			if !e.dirOrAbsent() {
				return false, nil
			}
		}
	}
	return true, nil
}
