package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path"
	"reflect"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// TestEncodeTreeObjectAsGoGit: the tree encoder writes what go-git's
// Tree.Encode writes, byte for byte, for every kind of entry, names of
// every length (empty trees included), and refuses a name with a NUL.
func TestEncodeTreeObjectAsGoGit(t *testing.T) {
	modes := []filemode.FileMode{filemode.Dir, filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule, 0o100664}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := rng.IntN(40)
		if round == 0 {
			n = 0
		}
		seen := map[string]bool{}
		var entries []object.TreeEntry
		for len(entries) < n {
			name := fmt.Sprintf("%s%d", string(rune('a'+rng.IntN(26))), rng.IntN(1000))
			if rng.IntN(5) == 0 {
				name += ".txt-é"
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			var h plumbing.Hash
			for i := range h {
				h[i] = byte(rng.IntN(256))
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: modes[rng.IntN(len(modes))], Hash: h})
		}
		sort.Sort(object.TreeEntrySorter(entries))
		want := &plumbing.MemoryObject{}
		if err := (&object.Tree{Entries: entries}).Encode(want); err != nil {
			t.Fatal(err)
		}
		got := &plumbing.MemoryObject{}
		if err := encodeTreeObject(got, entries); err != nil {
			t.Fatal(err)
		}
		if got.Hash() != want.Hash() || got.Type() != want.Type() || got.Size() != want.Size() {
			t.Fatalf("round %d: got %s %s %d, go-git %s %s %d", round, got.Hash(), got.Type(), got.Size(), want.Hash(), want.Type(), want.Size())
		}
	}
	if err := encodeTreeObject(&plumbing.MemoryObject{}, []object.TreeEntry{{Name: "a\x00b", Mode: filemode.Regular}}); err == nil {
		t.Fatal("a name with a NUL was encoded")
	}
}

// TestJoinPathAsPathJoin: joinPath is path.Join for every directory and
// name a tree walk can meet, corrupt trees' names included.
func TestJoinPathAsPathJoin(t *testing.T) {
	parts := []string{"", ".", "..", "/", "a", "b.txt", "a/b", "a//b", "./a", "../a", "a/", "/a", "a/./b", "a/../b", "é", "..a", "a.."}
	for _, dir := range parts {
		for _, name := range parts {
			if got, want := joinPath(dir, name), path.Join(dir, name); got != want {
				t.Errorf("joinPath(%q, %q) = %q, path.Join %q", dir, name, got, want)
			}
		}
	}
}

// TestDeletedFilesAsDiffTrees: the deletions one tree's walk lists are the
// ones diffTrees reports, in its order, on random pairs of trees — the
// second made from the first by deleting, changing and adding entries,
// files, links and submodules turned into directories and back, subtrees
// kept as they were or changed.
func TestDeletedFilesAsDiffTrees(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	r := &repo{s: gitobj.NewStore(dir, gitobj.NewCache(1<<20), 1, gitobj.Durability{}), overlay: map[plumbing.Hash]plumbing.EncodedObject{}}
	rng := rand.New(rand.NewPCG(3, 4))
	leaf := func() entry {
		modes := []filemode.FileMode{filemode.Regular, filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule}
		return entry{mode: modes[rng.IntN(len(modes))], hash: plumbing.NewHash(fmt.Sprintf("%040x", rng.IntN(4)))}
	}
	var gen func(depth int) treeNode
	gen = func(depth int) treeNode {
		n := treeNode{}
		for range rng.IntN(6) {
			name := string(rune('a' + rng.IntN(6)))
			if depth < 3 && rng.IntN(3) == 0 {
				n[name] = gen(depth + 1)
			} else {
				n[name] = leaf()
			}
		}
		return n
	}
	var mutate func(n treeNode, depth int) treeNode
	mutate = func(n treeNode, depth int) treeNode {
		m := treeNode{}
		for name, v := range n {
			switch rng.IntN(8) {
			case 0: // deleted
			case 1: // changed in kind or content
				if depth < 3 && rng.IntN(2) == 0 {
					m[name] = gen(depth + 1)
				} else {
					m[name] = leaf()
				}
			case 2:
				if sub, ok := v.(treeNode); ok {
					m[name] = mutate(sub, depth+1)
					continue
				}
				m[name] = v
			default:
				m[name] = v
			}
		}
		for range rng.IntN(3) {
			m[string(rune('a'+rng.IntN(8)))] = leaf()
		}
		return m
	}
	ctx := context.Background()
	deletions := 0
	for round := range 2000 {
		a := gen(0)
		b := mutate(a, 0)
		if round%2 == 1 {
			a, b = b, a
		}
		ha, hb := a.put(t, r), b.put(t, r)
		var want []pathEntry
		if err := r.diffTrees(ctx, ha, hb, func(p string, from, to entry) bool {
			if from.present() && !to.present() {
				want = append(want, pathEntry{p, from})
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		var got []pathEntry
		if err := r.deletedFiles(ctx, "", ha, hb, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: deletedFiles = %v, diffTrees' deletions %v", round, got, want)
		}
		deletions += len(want)
	}
	if deletions < 1000 {
		t.Errorf("only %d deletions in all rounds: the trees are too alike to test anything", deletions)
	}
}

// treeNode is a tree to write: an entry (a file, link or submodule) or a
// treeNode (a directory) by name.
type treeNode map[string]any

// put writes n and its subtrees into r's overlay and returns its hash.
func (n treeNode) put(t *testing.T, r *repo) plumbing.Hash {
	var es []object.TreeEntry
	for name, v := range n {
		switch v := v.(type) {
		case entry:
			es = append(es, object.TreeEntry{Name: name, Mode: v.mode, Hash: v.hash})
		case treeNode:
			es = append(es, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: v.put(t, r)})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.TreeObject)
	if err := encodeTreeObject(obj, es); err != nil {
		t.Fatal(err)
	}
	r.overlay[obj.Hash()] = obj
	return obj.Hash()
}
