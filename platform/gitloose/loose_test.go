package gitloose

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/gittest"
)

func inflated(t *testing.T, o plumbing.EncodedObject) string {
	t.Helper()
	rd, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Read reads what git wrote — a blob larger than the first buffers, a
// tree, a commit — as git cat-file shows it, finds no file where there is
// none, and refuses a file whose content is not the object it is named
// for, or is not zlib.
func TestReadAsGitWrote(t *testing.T) {
	gittest.Need(t)
	dir := filepath.Join(t.TempDir(), "r.git")
	gittest.Run(t, "", "init", "-q", "--bare", dir)
	big := strings.Repeat("a line that makes the object larger than the first buffers\n", 2000)
	blob := gittest.RunInput(t, dir, big, "hash-object", "-w", "--stdin")
	tree := gittest.RunInput(t, dir, "100644 blob "+blob+"\tbig.txt\n", "mktree")
	commit := gittest.RunInput(t, dir, "the message\n", "commit-tree", tree)
	for _, c := range []struct {
		sha  string
		typ  plumbing.ObjectType
		kind string
	}{{blob, plumbing.BlobObject, "blob"}, {tree, plumbing.TreeObject, "tree"}, {commit, plumbing.CommitObject, "commit"}} {
		h := plumbing.NewHash(c.sha)
		o, err := Read(Path(dir, h), h)
		if err != nil {
			t.Fatalf("Read(%s %s): %v", c.kind, c.sha, err)
		}
		want := gittest.Run(t, dir, "cat-file", c.kind, c.sha)
		if got := inflated(t, o); o.Type() != c.typ || o.Hash() != h || strings.TrimSpace(got) != want {
			t.Errorf("Read(%s) = %v %s, %d bytes; git: %s, %d bytes", c.sha, o.Type(), o.Hash(), len(got), c.kind, len(want))
		}
	}

	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, err := Read(Path(dir, missing), missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) = %v, want fs.ErrNotExist", err)
	}

	// The blob's file put where the tree's should be: its content is not
	// the tree.
	other := plumbing.NewHash(strings.Repeat("cd", 20))
	b, err := os.ReadFile(Path(dir, plumbing.NewHash(blob)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(Path(dir, other)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(dir, other), b, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(Path(dir, other), other); err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "hashes to "+blob) {
		t.Errorf("Read(another object's file) = %v, want an error naming its content's hash", err)
	}
	if err := os.WriteFile(Path(dir, other)+"x", []byte("not zlib"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(Path(dir, other)+"x", other); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(not zlib) = %v, want an error", err)
	}
}
