package gitobj

import (
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/cputime"
	"github.com/prsaga/prsaga/platform/gitrefs"
	"github.com/prsaga/prsaga/platform/gittest"
)

// BenchmarkMergeReads is what a W2 merge reads from files, each way
// side by side in one process: the target ref, a loose commit and a loose
// tree of 50 entries, and the config — "direct" as the store reads them
// now (ReadFile, Object), "go-git" as it read them before (os.DirFS,
// go-git's storage). Nothing is cached: every iteration reads the files.
//
//	go test ./gitrepo/gitobj -run '^$' -bench BenchmarkMergeReads -benchtime 5000x
func BenchmarkMergeReads(b *testing.B) {
	gittest.Need(b)
	dir := b.TempDir() + "/r.git"
	gittest.Run(b, "", "init", "-q", "--bare", dir)
	var files strings.Builder
	for i := range 50 {
		files.WriteString("100644 blob " + gittest.RunInput(b, dir, "f"+strings.Repeat("x", i)+"\n", "hash-object", "-w", "--stdin") + "\tf_" + string(rune('a'+i%26)) + strings.Repeat("x", i) + ".txt\n")
	}
	tree := gittest.RunInput(b, dir, files.String(), "mktree")
	commit := gittest.RunInput(b, dir, "", "commit-tree", "-m", "a commit", tree)
	gittest.Run(b, dir, "update-ref", "refs/heads/main", commit)
	s := NewStore(dir, NewCache(0), 1, Durability{}) // a zero budget keeps nothing
	defer s.Close()
	objs := []plumbing.Hash{plumbing.NewHash(commit), plumbing.NewHash(tree)}
	b.Run("direct", func(b *testing.B) {
		defer cputime.PerOp(b)()
		for b.Loop() {
			if _, err := ReadRef(dir, "main"); err != nil {
				b.Fatal(err)
			}
			for _, h := range objs {
				if _, err := s.Object(plumbing.AnyObject, h); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.Config(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-git", func(b *testing.B) {
		defer cputime.PerOp(b)()
		for b.Loop() {
			if _, _, err := gitrefs.Loose(os.DirFS(dir), "refs/heads/main"); err != nil {
				b.Fatal(err)
			}
			for _, h := range objs {
				if _, err := s.Storer().EncodedObject(plumbing.AnyObject, h); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.Storer().Config(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
