package engine

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// A file one side deleted and the other changed is a conflict here, as in
// git — unless git sees the deletion as a rename, and then merges the
// change into the new name, cleanly. Renames whose pairing is beyond doubt
// are merged (renamemerge.go, inexactrenames.go); for the rest, such a
// refusal says so, naming the likely new name, so that its reason names
// the case rather than a modify/delete conflict git does not report.

const (
	whyDeletedByOurs   = "deleted by the target, changed by the PR"
	whyDeletedByTheirs = "changed by the target, deleted by the PR"
)

// nameRenames rewrites the reasons of modify/delete conflicts whose
// deleting side added a file git could pair with the deleted one.
func (m *treeMerge) nameRenames(base plumbing.Hash, sl *sideLists) error {
	sizes := map[plumbing.Hash]int64{}
	for i := range m.conflicts {
		c := &m.conflicts[i]
		var ours bool
		var who string
		switch c.why {
		case whyDeletedByOurs:
			ours, who = true, "the target"
		case whyDeletedByTheirs:
			ours, who = false, "the PR"
		default:
			continue
		}
		added, err := sl.added(ours)
		if err != nil {
			return err
		}
		if len(added) > maxRenamePairs/len(m.conflicts) {
			continue
		}
		b, err := m.r.entryAt(base, c.path)
		if err != nil {
			return err
		}
		if !b.isRegular() {
			continue
		}
		for _, a := range added {
			maybe, err := m.maybeRename(b, a.e, sizes)
			if err != nil {
				return err
			}
			if maybe {
				c.why = fmt.Sprintf("%s (may be renamed to %s by %s: a rename on one side and a change on the other is merged only where git's pairing is beyond doubt)", c.why, a.path, who)
				break
			}
		}
	}
	return nil
}

// entryAt returns the entry at path p of tree root (the zero entry if
// there is none).
func (r *repo) entryAt(root plumbing.Hash, p string) (entry, error) {
	e := entry{mode: filemode.Dir, hash: root}
	for _, part := range strings.Split(p, "/") {
		if !e.isDir() {
			return entry{}, nil
		}
		entries, err := r.readTree(e.hash)
		if err != nil {
			return entry{}, err
		}
		e = entries[part]
	}
	return e, nil
}
