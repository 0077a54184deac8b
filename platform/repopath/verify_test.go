package repopath_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/repopath"
)

// errKind classes a Resolve or Verify error as the callers tell them apart.
func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, contracts.ErrInvalid):
		return "invalid"
	case errors.Is(err, repopath.ErrNotFound):
		return "not found"
	case errors.Is(err, repopath.ErrOutside):
		return "outside"
	}
	return "other"
}

// Verify gives Resolve's answer for every shape of the layout: plain
// repositories, links inside and out, missing and malformed ids.
func TestVerifyAgreesWithResolve(t *testing.T) {
	l := newLayout(t)
	for _, repo := range []string{
		"acme/widgets", "acme/alias", "acme/relative", "mirror/widgets", "other/gadgets",
		"acme/nothing", "nobody/widgets", "afile/widgets", "acme/empty", "acme/checkout",
		"acme/evil", "acme/relevil", "out/evil", "acme/self", "acme/loop",
		"", "acme", "acme/..", "../widgets", "acme/widgets.git", "acme/wid gets",
	} {
		_, rerr := l.root.Resolve(repo)
		verr := l.root.Verify(repo)
		if errKind(verr) != errKind(rerr) {
			t.Errorf("Verify(%q) = %v (%s); Resolve says %v (%s)", repo, verr, errKind(verr), rerr, errKind(rerr))
		}
	}
}

// A repository verified once and then replaced by a link out of the repos
// dir, or by a directory that is not a repository, is refused by the next
// Verify (nothing is remembered between calls); the repos dir being a link
// itself does not matter.
func TestVerifyAfterASwap(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	dir := mkBare(t, filepath.Join(real, "acme", "widgets.git"))
	outside := mkBare(t, filepath.Join(base, "outside", "evil.git"))
	symlink(t, real, filepath.Join(base, "link"))
	root := repopath.New(filepath.Join(base, "link"))
	if err := root.Verify("acme/widgets"); err != nil {
		t.Fatalf("Verify before the swap: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, dir)
	if err := root.Verify("acme/widgets"); !errors.Is(err, repopath.ErrOutside) {
		t.Errorf("Verify of a repository swapped for a link out = %v, want ErrOutside", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := root.Verify("acme/widgets"); !errors.Is(err, repopath.ErrNotFound) {
		t.Errorf("Verify of a directory that is no repository = %v, want ErrNotFound", err)
	}
	// The owner swapped for a link out, the repository's name a directory there.
	if err := os.RemoveAll(filepath.Join(real, "acme")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(base, "outside"), filepath.Join(real, "acme"))
	if err := os.Rename(outside, filepath.Join(base, "outside", "widgets.git")); err != nil {
		t.Fatal(err)
	}
	if err := root.Verify("acme/widgets"); !errors.Is(err, repopath.ErrOutside) {
		t.Errorf("Verify through an owner linked out = %v, want ErrOutside", err)
	}
}

// BenchmarkResolve and BenchmarkVerify: the check of a plain repository
// (what the merger asks on every open), four elements below the temp dir.
func BenchmarkResolve(b *testing.B) {
	l := newLayout(b)
	for b.Loop() {
		if _, err := l.root.Resolve("acme/widgets"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	l := newLayout(b)
	for b.Loop() {
		if err := l.root.Verify("acme/widgets"); err != nil {
			b.Fatal(err)
		}
	}
}
