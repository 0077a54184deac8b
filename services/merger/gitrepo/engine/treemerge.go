package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeMerge is one tree-level three-way merge of base, ours (the target
// head) and theirs (the PR head).
//
// Per path: what both sides have alike is kept (unchanged, changed the same
// way, or deleted on both); what only one side changed is taken from that
// side, whole (a subtree by its hash, unread); where both sides changed a
// directory differently the merge recurses; a regular file both sides
// changed is merged as git merges it — modes, then contents, line by line
// where that is certain to give git's result (filemerge.go); every other
// path changed on both sides is a conflict (symlink targets, submodule
// commits, type changes). On top of that, whatever git's rename and
// directory-rename detection could turn into a different result is a
// conflict (see renames.go). The new objects are kept in memory and written
// only if the whole merge is clean.
type treeMerge struct {
	ctx context.Context // checked per directory and per file merged
	r   *repo
	// attrRoot is the tree whose .gitattributes say how contents merge:
	// the target's (attributes.go); attrs is read from it when a first file
	// needs a line merge.
	attrRoot plumbing.Hash
	attrs    *mergeAttributes
	renorm   *string // why no file may be line-merged ("" none); read once
	diff3    *string // merge.conflictStyle if diff3 or zdiff3; read once

	// fixes are exact renames merged with the other side's change
	// (renamemerge.go), by old and new path; fixDirs the directories above
	// a new name; sides the files each side deleted and added.
	fixes   map[string]renameFix
	fixDirs map[string]bool
	sides   *sideLists

	objects   []plumbing.EncodedObject // new blobs and trees, children before parents
	conflicts []conflict
}

type conflict struct {
	path string
	why  string
}

type pathEntry struct {
	path string
	e    entry
}

// removedBy marks a recursion into a directory that one side removed
// entirely: anything the other side adds under it is a conflict, since git
// may detect a directory rename and move the addition elsewhere.
type removedBy int

const (
	removedByNone removedBy = iota
	removedByOurs
	removedByTheirs
)

// mergeTrees merges three root trees, with the merge attributes of tree
// attrRoot (the target's; see attributes.go). It returns the result tree's hash
// (the empty tree's if nothing is left) and the new tree objects to write,
// or a *ConflictError.
func (r *repo) mergeTrees(ctx context.Context, base, ours, theirs, attrRoot plumbing.Hash) (plumbing.Hash, []plumbing.EncodedObject, error) {
	m := &treeMerge{ctx: ctx, r: r, attrRoot: attrRoot}
	if err := m.findExactRenames(base, ours, theirs); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	root, err := m.mergeDir("", base, ours, theirs, removedByNone)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := m.checkRenames(base, ours, theirs); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if len(m.conflicts) > 0 {
		return plumbing.ZeroHash, nil, m.conflictError()
	}
	if root.IsZero() { // everything deleted: the empty tree
		if root, err = m.encodeTree(nil); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	return root, m.objects, nil
}

// mergeDir merges three versions of a directory (zero hash: absent) and
// returns the merged tree, or the zero hash if it is empty.
func (m *treeMerge) mergeDir(dir string, b, o, t plumbing.Hash, removed removedBy) (plumbing.Hash, error) {
	if err := canceled(m.ctx, "directory /"+dir); err != nil {
		return plumbing.ZeroHash, err
	}
	trees := make([]*parsedTree, 3)
	for i, h := range []plumbing.Hash{b, o, t} {
		var err error
		if trees[i], err = m.r.readParsed(h); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	// Without renames to fix, a path all three have alike is kept as it
	// is (mergeEntry's first rule), whatever the directory's removedBy.
	plain := len(m.fixes) == 0 && len(m.fixDirs) == 0
	out := make([]object.TreeEntry, 0, len(trees[1].names)+len(trees[2].names)/8)
	err := joinTrees(trees, func(name string, es *[3]entry) error {
		if plain && es[0] == es[1] && es[1] == es[2] && canonicalMode(es[1].mode) {
			out = append(out, object.TreeEntry{Name: name, Mode: es[1].mode, Hash: es[1].hash})
			return nil
		}
		p := joinPath(dir, name)
		res, err := m.mergeEntry(p, es[0], es[1], es[2], removed)
		if err != nil {
			return err
		}
		if !res.present() {
			return nil
		}
		if !canonicalMode(res.mode) {
			m.conflict(p, fmt.Sprintf("unusual file mode %o", uint32(res.mode)))
		}
		out = append(out, object.TreeEntry{Name: name, Mode: res.mode, Hash: res.hash})
		return nil
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(out) == 0 || len(m.conflicts) > 0 {
		return plumbing.ZeroHash, nil // empty directories vanish, as in git
	}
	return m.encodeTree(out)
}

// mergeEntry merges one path's three versions.
func (m *treeMerge) mergeEntry(p string, b, o, t entry, removed removedBy) (entry, error) {
	if fx, ok := m.fixes[p]; ok {
		if fx.isNew && removed != removedByNone && !b.present() {
			// git may move it with the directory the other side renamed.
			m.conflict(p, "renamed into a directory the other side removed (possible directory rename)")
			return entry{}, nil
		}
		return fx.new, nil
	}
	if m.fixDirs[p] && o != t {
		return m.mergeSubdir(p, b, o, t, removed)
	}
	switch {
	case o == t: // unchanged, changed alike, or deleted on both sides
		return o, nil
	case b == o: // only the PR changed it
		if removed == removedByOurs && !b.present() {
			m.conflict(p, "added by the PR inside a directory the target removed (possible directory rename)")
		}
		return t, nil
	case b == t: // only the target changed it
		if removed == removedByTheirs && !b.present() {
			m.conflict(p, "added by the target inside a directory the PR removed (possible directory rename)")
		}
		return o, nil
	}
	// Both sides changed it, differently.
	if b.dirOrAbsent() && o.dirOrAbsent() && t.dirOrAbsent() {
		return m.mergeSubdir(p, b, o, t, removed)
	}
	if b.isRegular() && o.isRegular() && t.isRegular() {
		return m.mergeFile(p, b, o, t)
	}
	m.conflict(p, describeConflict(b, o, t))
	return entry{}, nil
}

// mergeSubdir merges three versions of directory p (each a directory or
// absent).
func (m *treeMerge) mergeSubdir(p string, b, o, t entry, removed removedBy) (entry, error) {
	sub := removed
	switch {
	case b.present() && !o.present():
		sub = removedByOurs
	case b.present() && !t.present():
		sub = removedByTheirs
	}
	h, err := m.mergeDir(p, b.hash, o.hash, t.hash, sub)
	if err != nil || h.IsZero() {
		return entry{}, err
	}
	return entry{mode: filemode.Dir, hash: h}, nil
}

// describeConflict says why a path changed on both sides cannot be merged.
func describeConflict(b, o, t entry) string {
	switch {
	case !o.present():
		return whyDeletedByOurs
	case !t.present():
		return whyDeletedByTheirs
	case o.isDir() != t.isDir() || b.present() && b.isDir() != o.isDir():
		return "file/directory conflict"
	case !b.present():
		return "added on both sides with different contents"
	case o.mode == filemode.Submodule || t.mode == filemode.Submodule:
		return "submodule changed on both sides"
	case o.mode == filemode.Symlink || t.mode == filemode.Symlink:
		return "symlink changed on both sides"
	case o.mode != t.mode:
		return "file type changed on one side, changed on the other"
	default:
		return "changed on both sides"
	}
}

// canonicalMode: the modes git writes. Entries with legacy modes (e.g.
// 100664) would be normalised by git in a new tree; rather than guess, such
// a path is a conflict.
func canonicalMode(m filemode.FileMode) bool {
	switch m {
	case filemode.Dir, filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
		return true
	}
	return false
}

func (m *treeMerge) conflict(p, why string) {
	m.conflicts = append(m.conflicts, conflict{path: p, why: why})
}

// encodeTree encodes a new tree object in memory (sorted as git sorts:
// directories compare as "name/") and keeps it for writing.
func (m *treeMerge) encodeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	// The result tree is read again right away (changed paths), and as a
	// base of the next merge into the branch.
	parsed := newParsedTree(entries)
	sort.Sort(object.TreeEntrySorter(entries))
	obj := m.r.s.NewEncodedObject()
	if err := encodeTreeObject(obj, entries); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	m.objects = append(m.objects, obj)
	m.r.cacheTree(obj.Hash(), parsed)
	return obj.Hash(), nil
}

// conflictError reports the conflicts, sorted by path, capped, with the
// first ones' reasons.
func (m *treeMerge) conflictError() error {
	sort.SliceStable(m.conflicts, func(i, j int) bool { return m.conflicts[i].path < m.conflicts[j].path })
	var paths []string
	var seen = map[string]bool{}
	var reason string
	for _, c := range m.conflicts {
		if seen[c.path] {
			continue
		}
		seen[c.path] = true
		if len(paths) < MaxConflictPaths {
			paths = append(paths, c.path)
		}
		if len(seen) <= 3 {
			if reason != "" {
				reason += "; "
			}
			reason += c.path + ": " + c.why
		}
	}
	if len(seen) > 3 {
		reason += fmt.Sprintf("; and %d more", len(seen)-3)
	}
	return &ConflictError{Paths: paths, Reason: reason}
}

// encodeTreeObject writes entries, in git's order, as a tree object into
// obj: what go-git's Tree.Encode writes, byte for byte, in one write of a
// buffer of the exact size (Encode formats each entry with fmt, in three
// writes, growing the object as it goes: a tenth of a merge into a root
// of 500 entries).
func encodeTreeObject(obj plumbing.EncodedObject, entries []object.TreeEntry) error {
	size := 0
	for _, e := range entries {
		if strings.IndexByte(e.Name, 0) >= 0 {
			return fmt.Errorf("malformed filename %q", e.Name)
		}
		size += 7 + 1 + len(e.Name) + 1 + len(e.Hash)
	}
	buf := make([]byte, 0, size)
	for _, e := range entries {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	obj.SetType(plumbing.TreeObject)
	w, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
