package gitobj

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/gitloose"
	"github.com/prsaga/prsaga/platform/gittest"
)

func content(t *testing.T, o plumbing.EncodedObject) string {
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

// Object reads what git wrote, loose and packed, as go-git's storage
// reads it, refuses a wrong type as go-git does, and finds nothing where
// there is nothing.
func TestObjectReadsAsGoGit(t *testing.T) {
	s := newBareStore(t, Durability{})
	big := strings.Repeat("a line that makes the object larger than the first buffer\n", 2000)
	loose := gittest.RunInput(t, s.Dir(), big, "hash-object", "-w", "--stdin")
	packed := gittest.RunInput(t, s.Dir(), "packed\n", "hash-object", "-w", "--stdin")
	gittest.RunInput(t, s.Dir(), packed+"\n", "pack-objects", "-q", filepath.Join(s.Dir(), "objects", "pack", "pack"))
	if err := os.Remove(gitloose.Path(s.Dir(), plumbing.NewHash(packed))); err != nil {
		t.Fatal(err)
	}
	s.Refresh()
	for _, h := range []string{loose, packed} {
		got, err := s.Object(plumbing.BlobObject, plumbing.NewHash(h))
		if err != nil {
			t.Fatalf("Object(%s): %v", h, err)
		}
		want, err := s.Storer().EncodedObject(plumbing.BlobObject, plumbing.NewHash(h))
		if err != nil {
			t.Fatal(err)
		}
		if got.Type() != want.Type() || got.Size() != want.Size() || got.Hash() != want.Hash() || content(t, got) != content(t, want) {
			t.Errorf("Object(%s) = %v %d bytes, go-git reads %v %d bytes", h, got.Type(), got.Size(), want.Type(), want.Size())
		}
	}
	fresh := NewStore(s.Dir(), NewCache(1<<20), 2, Durability{}) // nothing cached
	if _, err := fresh.Object(plumbing.CommitObject, plumbing.NewHash(loose)); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("Object(a blob as a commit) = %v, want ErrObjectNotFound", err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, err := fresh.Object(plumbing.AnyObject, missing); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("Object(missing) = %v, want ErrObjectNotFound", err)
	}
}

// A loose object whose file does not hold it — another object's content,
// a short content, not zlib — is an error, never a wrong object.
func TestObjectRefusesACorruptLooseObject(t *testing.T) {
	deflated := func(s string) []byte {
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.Bytes()
	}
	for name, file := range map[string][]byte{
		"another object":    deflated("blob 5\x00other"),
		"shorter than said": deflated("blob 9\x00hello"),
		"longer than said":  deflated("blob 3\x00hello"),
		"not zlib":          []byte("blob 5\x00hello"),
	} {
		t.Run(name, func(t *testing.T) {
			s := newBareStore(t, Durability{})
			h := plumbing.ComputeHash(plumbing.BlobObject, []byte("hello"))
			path := gitloose.Path(s.Dir(), h)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, file, 0o444); err != nil {
				t.Fatal(err)
			}
			if o, err := s.Object(plumbing.AnyObject, h); err == nil {
				t.Fatalf("Object = %v %q, want an error", o.Type(), content(t, o))
			}
		})
	}
}
