package repopath

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// countBare counts IsBare's calls for the test and sets the racy window.
func countBare(t testing.TB, window time.Duration) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	oldBare, oldWindow := isBare, racyWindow
	isBare = func(dir string) bool { n.Add(1); return IsBare(dir) }
	racyWindow = window
	bareDirs.mu.Lock()
	clear(bareDirs.dirs)
	bareDirs.mu.Unlock()
	t.Cleanup(func() { isBare, racyWindow = oldBare, oldWindow })
	return &n
}

// makeBare lays out what IsBare asks for under root/acme/<name>.git.
func makeBare(t testing.TB, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, "acme", name+".git")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// settle waits (bounded) until dir's times lie beyond the racy window.
func settle(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, ok := plainDirStamp(dir)
		if !ok {
			t.Fatalf("%s is not a directory", dir)
		}
		cut := time.Now().Add(-racyWindow).UnixNano()
		if s.mtime < cut && s.ctime < cut {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's times did not settle", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A bare repository Verify has seen, untouched since, is not stat'ed
// again; any change of its entries — HEAD removed, objects replaced by a
// file, the directory replaced by another — is seen at once.
func TestVerifyRemembersABareRepositoryUntilItChanges(t *testing.T) {
	calls := countBare(t, 30*time.Millisecond)
	root := New(t.TempDir())
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
	verify(ErrNotFound)
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
	verify(ErrNotFound)

	// Another directory in its place: a new inode, with times of its own.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	verify(ErrNotFound)
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
	calls := countBare(t, time.Hour)
	root := New(t.TempDir())
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
			countBare(b, c.window)
			root := New(b.TempDir())
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
