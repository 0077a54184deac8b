package gitobj

import (
	"bytes"
	"compress/zlib"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/gittest"
)

func newBareStore(t *testing.T, d Durability) *Store {
	t.Helper()
	gittest.Need(t)
	dir := filepath.Join(t.TempDir(), "r.git")
	gittest.Run(t, "", "init", "-q", "--bare", dir)
	s := NewStore(dir, NewCache(1<<20), 1, d)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func blob(s *Store, content string) plumbing.EncodedObject {
	o := s.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, _ := o.Writer()
	_, _ = io.WriteString(w, content)
	_ = w.Close()
	return o
}

// TestLooseObjectsAsGitReadsThem writes objects by each way this store
// has (a file without a name linked into place; a named temporary file
// renamed) and checks that git reads them back, that they are read-only
// as git's, compressed at git's loose level, and that nothing else is
// left in the object directories.
func TestLooseObjectsAsGitReadsThem(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "unnamed", true: "named"}[named], func(t *testing.T) {
			s := newBareStore(t, Durability{})
			s.named = named
			content := strings.Repeat("a line of the blob\n", 200)
			o := blob(s, content)
			if err := s.WriteObjects(o); err != nil {
				t.Fatal(err)
			}
			if got := gittest.Run(t, s.Dir(), "cat-file", "-p", o.Hash().String()); got != strings.TrimSpace(content) {
				t.Fatalf("git cat-file: %d bytes, want the blob's %d", len(got), len(content))
			}
			file := filepath.Join(s.Dir(), "objects", o.Hash().String()[:2], o.Hash().String()[2:])
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o222 != 0 {
				t.Errorf("loose object mode %v, want read-only", fi.Mode())
			}
			raw, _ := os.ReadFile(file)
			if len(raw) < 2 || raw[0] != 0x78 || raw[1] != 0x01 {
				t.Errorf("zlib header % x, want 78 01 (best speed, git's core.looseCompression default)", raw[:2])
			}
			zr, err := zlib.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(zr); string(got) != "blob 3800\x00"+content {
				t.Errorf("loose object holds %.40q…, want the header and the content", got)
			}
			if left, _ := filepath.Glob(filepath.Join(s.Dir(), "objects", "*", "tmp_*")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
			gittest.Run(t, s.Dir(), "fsck", "--strict")
		})
	}
}

// TestLooseObjectFanOutDirectoryRemoved: the store does not look its
// fan-out directories up before writing, so it must make one again when
// git prune removed it (it removes those it empties) between two writes.
func TestLooseObjectFanOutDirectoryRemoved(t *testing.T) {
	for _, named := range []bool{false, true} {
		s := newBareStore(t, Durability{})
		s.named = named
		a, b := blob(s, "first\n"), blob(s, "second\n")
		if err := s.WriteObjects(a); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(s.Dir(), "objects", a.Hash().String()[:2])); err != nil {
			t.Fatal(err)
		}
		a2 := blob(s, "first\n")
		if err := s.WriteObjects(a2, b); err != nil {
			t.Fatalf("named=%v: write after the fan-out directory was removed: %v", named, err)
		}
		for _, o := range []plumbing.EncodedObject{a, b} {
			gittest.Run(t, s.Dir(), "cat-file", "-e", o.Hash().String())
		}
	}
}

// TestLooseObjectPresentIsNotRewritten: an object already there is left
// alone (not even opened for writing: it is read-only, as git's).
func TestLooseObjectPresentIsNotRewritten(t *testing.T) {
	s := newBareStore(t, Durability{})
	o := blob(s, "present\n")
	want := gittest.RunInput(t, s.Dir(), "present\n", "hash-object", "-w", "--stdin")
	if want != o.Hash().String() {
		t.Fatalf("git wrote %s, the store names it %s", want, o.Hash())
	}
	file := filepath.Join(s.Dir(), "objects", want[:2], want[2:])
	before, _ := os.Stat(file)
	var fsynced []string
	s.durable = Durability{Sync: true, OnFsync: func(p string) { fsynced = append(fsynced, p) }}
	if err := s.WriteObjects(blob(s, "present\n")); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(file)
	if !os.SameFile(before, after) {
		t.Error("the present object was replaced")
	}
	if len(fsynced) != 0 {
		t.Errorf("fsynced %v for an object already present", fsynced)
	}
}

// TestLooseObjectWrongHashRefused: an object whose content does not hash
// to its name is never written (it would be a corrupt object).
func TestLooseObjectWrongHashRefused(t *testing.T) {
	s := newBareStore(t, Durability{})
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	_, _ = o.Write([]byte("content\n"))
	forged := forgedHash{o, plumbing.ComputeHash(plumbing.BlobObject, []byte("other\n"))}
	if err := s.WriteObjects(forged); err == nil || !strings.Contains(err.Error(), "encoded as") {
		t.Fatalf("WriteObjects of a mis-named object = %v; want refused", err)
	}
	h := forged.Hash().String()
	if _, err := os.Stat(filepath.Join(s.Dir(), "objects", h[:2], h[2:])); err == nil {
		t.Error("the mis-named object was written")
	}
}

type forgedHash struct {
	plumbing.EncodedObject
	h plumbing.Hash
}

func (f forgedHash) Hash() plumbing.Hash { return f.h }
