package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"

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

// readTree returns a tree's entries by name; the zero hash is the empty tree.
// The map is shared with the cache of parsed trees: callers must not
// modify it.
func (r *repo) readTree(h plumbing.Hash) (map[string]entry, error) {
	if h.IsZero() {
		return map[string]entry{}, nil
	}
	if entries, ok := r.s.CachedTree(h); ok {
		return entries.(map[string]entry), nil
	}
	entries := map[string]entry{}
	var t *object.Tree
	var err error
	if o, ok := r.overlay[h]; ok {
		t, err = object.DecodeTree(r.s.Storer(), o)
	} else {
		t, err = object.GetTree(r.s.Storer(), h)
	}
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Empty {
			return nil, fmt.Errorf("tree %s: entry %q has no mode", h, e.Name)
		}
		entries[e.Name] = entry{mode: e.Mode, hash: e.Hash}
	}
	r.cacheTree(h, entries)
	return entries, nil
}

// cacheTree keeps a parsed tree in the store's cache.
func (r *repo) cacheTree(h plumbing.Hash, entries map[string]entry) {
	names := 0
	for n := range entries {
		names += len(n)
	}
	r.s.CacheTree(h, entries, len(entries), names)
}

// unionNames lists the names of all the trees, sorted.
func unionNames(trees ...map[string]entry) []string {
	seen := map[string]bool{}
	var names []string
	for _, t := range trees {
		for n := range t {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
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
	if err := canceled(ctx, "a tree diff"); err != nil {
		return err
	}
	ta, err := r.readTree(a)
	if err != nil {
		return err
	}
	tb, err := r.readTree(b)
	if err != nil {
		return err
	}
	for _, name := range unionNames(ta, tb) {
		ea, eb := ta[name], tb[name]
		if ea == eb {
			continue
		}
		p := path.Join(dir, name)
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
	}
	return nil
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
