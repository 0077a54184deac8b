package engine

import (
	"fmt"
	"math/rand/v2"
	"path"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
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
