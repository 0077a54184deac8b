package repopath_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/repopath"
)

// makeBare lays out a bare repository (mkBare) at root/acme/<name>.git.
func makeBare(t testing.TB, root, name string) string {
	t.Helper()
	return mkBare(t, filepath.Join(root, "acme", name+".git"))
}

// settle waits until dir's times lie beyond the racy window.
func settle(t testing.TB, dir string) {
	t.Helper()
	natstest.WaitFor(t, 10*time.Second, dir+"'s times to settle", func() bool { return repopath.Settled(dir) })
}

// A bare repository Verify has seen, untouched since, is not stat'ed
// again; any change of its entries — HEAD removed, objects replaced by a
// file, the directory replaced by another — is seen at once.
func TestVerifyRemembersABareRepositoryUntilItChanges(t *testing.T) {
	calls := repopath.CountBare(t, 30*time.Millisecond)
	root := repopath.New(t.TempDir())
	dir := makeBare(t, root.Dir(), "widgets")
	settle(t, dir)
	verify := func(want error) {
		t.Helper()
		if err := root.Verify("acme/widgets"); !errors.Is(err, want) {
			t.Fatalf("Verify: %v, want %v", err, want)
		}
	}
	verify(nil)
	verify(nil)
	verify(nil)
	if n := calls.Load(); n != 1 {
		t.Fatalf("IsBare ran %d times for an unchanged repository, want once", n)
	}

	if err := os.Remove(filepath.Join(dir, "HEAD")); err != nil {
		t.Fatal(err)
	}
	verify(repopath.ErrNotFound)
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settle(t, dir)
	verify(nil)

	if err := os.RemoveAll(filepath.Join(dir, "objects")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "objects"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	verify(repopath.ErrNotFound)

	// Another directory in its place: a new inode, with times of its own.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	verify(repopath.ErrNotFound)
	makeBare(t, root.Dir(), "widgets")
	before := calls.Load()
	verify(nil)
	if calls.Load() == before {
		t.Error("the replacing directory was taken from the cache")
	}
}

// A repository whose entries changed within the racy window is checked
// every time: a change in the same clock tick could leave its times as
// they were.
func TestVerifyDoesNotRememberARecentlyChangedRepository(t *testing.T) {
	calls := repopath.CountBare(t, time.Hour)
	root := repopath.New(t.TempDir())
	makeBare(t, root.Dir(), "widgets")
	for range 3 {
		if err := root.Verify("acme/widgets"); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("IsBare ran %d times for a repository changed just now, want 3", n)
	}
}

// BenchmarkVerifyCache: a repository unchanged for a while (remembered: two
// lstats) and one changed just now (two lstats and IsBare's three stats).
func BenchmarkVerifyCache(b *testing.B) {
	for _, c := range []struct {
		name   string
		window time.Duration
	}{{"remembered", 10 * time.Millisecond}, {"changed-just-now", time.Hour}} {
		b.Run(c.name, func(b *testing.B) {
			repopath.CountBare(b, c.window)
			root := repopath.New(b.TempDir())
			dir := makeBare(b, root.Dir(), "widgets")
			if c.window < time.Second {
				settle(b, dir)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := root.Verify("acme/widgets"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
