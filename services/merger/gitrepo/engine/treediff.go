package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// entry is one version of a path in a tree: mode and object. The zero entry
// means "absent".
type entry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

func (e entry) present() bool { return e.mode != filemode.Empty }
func (e entry) isDir() bool   { return e.mode == filemode.Dir }

// isRegular: a file git merges line by line (not a symlink or submodule).
func (e entry) isRegular() bool { return e.mode == filemode.Regular || e.mode == filemode.Executable }

// dirOrAbsent: a directory, or nothing — what a three-way merge can recurse into.
func (e entry) dirOrAbsent() bool { return !e.present() || e.isDir() }

// parsedTree is a tree as the cache of parsed trees keeps it: its
// entries by name, and the same entries in the order of their names'
// bytes, for merge-joins of trees without a union of their names sorted
// per walk (every merge walks main's root tree three or four times).
type parsedTree struct {
	byName map[string]entry
	names  []string // sorted by bytes (not git's order: "a/" for a directory)
	ents   []entry  // ents[i] is names[i]'s
}

// sortedEntryBytes is what names and ents add to the cache's estimate
// per entry: a string header and an entry.
const sortedEntryBytes = 16 + 24

// emptyTree is the zero hash's tree; shared, never modified.
var emptyTree = &parsedTree{byName: map[string]entry{}}

// readTree returns a tree's entries by name; the zero hash is the empty tree.
// The map is shared with the cache of parsed trees: callers must not
// modify it.
func (r *repo) readTree(h plumbing.Hash) (map[string]entry, error) {
	t, err := r.readParsed(h)
	if err != nil {
		return nil, err
	}
	return t.byName, nil
}

// readParsed returns a parsed tree; the zero hash is the empty tree. It is
// shared with the cache: callers must not modify it.
func (r *repo) readParsed(h plumbing.Hash) (*parsedTree, error) {
	if h.IsZero() {
		return emptyTree, nil
	}
	if t, ok := r.s.CachedTree(h); ok {
		return t.(*parsedTree), nil
	}
	o, err := r.object(plumbing.TreeObject, h)
	var t *object.Tree
	if err == nil {
		// Only the entries are kept: the tree is bound to no storage, so
		// that a merge reading loose trees leaves go-git's unopened
		// (gitobj.Store.Session).
		t, err = object.DecodeTree(nil, o)
	}
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Empty {
			return nil, fmt.Errorf("tree %s: entry %q has no mode", h, e.Name)
		}
	}
	p := newParsedTree(t.Entries)
	r.cacheTree(h, p)
	return p, nil
}

// newParsedTree indexes a tree's entries (in any order; names unique).
func newParsedTree(entries []object.TreeEntry) *parsedTree {
	p := &parsedTree{
		byName: make(map[string]entry, len(entries)),
		names:  make([]string, len(entries)),
		ents:   make([]entry, len(entries)),
	}
	sorted := true
	for i, e := range entries {
		p.byName[e.Name] = entry{mode: e.Mode, hash: e.Hash}
		p.names[i], p.ents[i] = e.Name, entry{mode: e.Mode, hash: e.Hash}
		sorted = sorted && (i == 0 || p.names[i-1] < e.Name)
	}
	switch {
	case len(p.byName) < len(entries):
		// A name twice (a corrupt tree): the map's entry, the last, is the
		// only one, as for every other reader of the tree.
		p.names = p.names[:0]
		for n := range p.byName {
			p.names = append(p.names, n)
		}
		sort.Strings(p.names)
		p.ents = p.ents[:len(p.names)]
		for i, n := range p.names {
			p.ents[i] = p.byName[n]
		}
	case !sorted: // git's order puts "a/" (a directory) after "a.txt"
		sort.Sort(byNameBytes{p})
	}
	return p
}

type byNameBytes struct{ *parsedTree }

func (s byNameBytes) Len() int           { return len(s.names) }
func (s byNameBytes) Less(i, j int) bool { return s.names[i] < s.names[j] }
func (s byNameBytes) Swap(i, j int) {
	s.names[i], s.names[j] = s.names[j], s.names[i]
	s.ents[i], s.ents[j] = s.ents[j], s.ents[i]
}

// cacheTree keeps a parsed tree in the store's cache.
func (r *repo) cacheTree(h plumbing.Hash, t *parsedTree) {
	names := 0
	for _, n := range t.names {
		names += len(n)
	}
	r.s.CacheTree(h, t, len(t.names), names+len(t.names)*sortedEntryBytes)
}

// joinTrees calls fn for every name of two or three parsed trees, in the
// order of sort.Strings, with each tree's entry for it (the zero entry
// where a tree lacks it): a merge-join of their sorted entries, the
// union of their names without a map or a sort.
func joinTrees(trees []*parsedTree, fn func(name string, es *[3]entry) error) error {
	var at [3]int
	var es [3]entry
	for {
		name, more := "", false
		for i, t := range trees {
			if at[i] < len(t.names) && (!more || t.names[at[i]] < name) {
				name, more = t.names[at[i]], true
			}
		}
		if !more {
			return nil
		}
		for i, t := range trees {
			es[i] = entry{}
			if at[i] < len(t.names) && t.names[at[i]] == name {
				es[i] = t.ents[at[i]]
				at[i]++
			}
		}
		if err := fn(name, &es); err != nil {
			return err
		}
	}
}

// errStopWalk ends a diff walk early without an error.
var errStopWalk = errors.New("stop walk")

// diffTrees calls fn for every non-directory path whose entry differs
// between tree a and tree b (zero hashes are empty trees), skipping
// identical subtrees by hash. A directory present on one side only is
// expanded into its files. fn returns false to stop the walk. It checks
// ctx at every directory.
func (r *repo) diffTrees(ctx context.Context, a, b plumbing.Hash, fn func(path string, from, to entry) bool) error {
	err := r.diffDir(ctx, "", a, b, fn)
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

func (r *repo) diffDir(ctx context.Context, dir string, a, b plumbing.Hash, fn func(string, entry, entry) bool) error {
	if a == b {
		return nil
	}
	ta, tb, err := r.readPair(ctx, a, b)
	if err != nil {
		return err
	}
	return joinTrees([]*parsedTree{ta, tb}, func(name string, es *[3]entry) error {
		ea, eb := es[0], es[1]
		if ea == eb {
			return nil
		}
		p := joinPath(dir, name)
		var subA, subB plumbing.Hash
		if ea.isDir() {
			subA, ea = ea.hash, entry{}
		}
		if eb.isDir() {
			subB, eb = eb.hash, entry{}
		}
		if !subA.IsZero() || !subB.IsZero() {
			if err := r.diffDir(ctx, p, subA, subB, fn); err != nil {
				return err
			}
		}
		if ea != eb && !fn(p, ea, eb) {
			return errStopWalk
		}
		return nil
	})
}

// readPair reads the two trees a step of a tree diff compares, once ctx
// allows it.
func (r *repo) readPair(ctx context.Context, a, b plumbing.Hash) (ta, tb *parsedTree, err error) {
	if err := canceled(ctx, "a tree diff"); err != nil {
		return nil, nil, err
	}
	if ta, err = r.readParsed(a); err == nil {
		tb, err = r.readParsed(b)
	}
	return ta, tb, err
}

// changedPaths lists the files that differ between two trees, sorted, at
// most MaxChangedPaths of them.
func (r *repo) changedPaths(ctx context.Context, from, to plumbing.Hash) ([]string, error) {
	var paths []string
	err := r.diffTrees(ctx, from, to, func(p string, _, _ entry) bool {
		paths = append(paths, p)
		return len(paths) < MaxChangedPaths
	})
	if err != nil {
		return nil, fmt.Errorf("changed paths: %w", err)
	}
	sort.Strings(paths)
	return paths, nil
}

// joinPath is path.Join(dir, name) without its allocations in the usual
// case: a name of one clean element under a clean directory (or the root,
// ""), where path.Join's clean-up changes nothing. Anything else — a name
// with a slash, ".", "..", empty, a directory "." or "/" — goes to
// path.Join.
func joinPath(dir, name string) string {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return path.Join(dir, name)
	}
	if dir == "" {
		return name
	}
	if dir == "." || dir == "/" || path.Clean(dir) != dir {
		return path.Join(dir, name)
	}
	return dir + "/" + name
}
