package reflock_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
	"golang.org/x/sys/unix"
)

// A git directory with refs/heads/main at hash(0), written as git does.
func bareRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(gitobj.LoosePath(dir, "main"), []byte(hash(0).String()+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return dir
}

// requireExchange skips a test of spares where the merger would not use
// them: a file system that is not local (a lease cannot see other nodes'
// readers) or a kernel or file system without RENAME_EXCHANGE — the
// merger renames over the ref there, as the other tests check.
func requireExchange(t *testing.T, dir string) {
	t.Helper()
	if !reflock.LocalFS(dir) {
		t.Skipf("%s is not on a local file system (ext4, xfs, btrfs, tmpfs, f2fs, zfs): the merger renames refs over there", dir)
	}
	a, b := filepath.Join(dir, "exchange-a"), filepath.Join(dir, "exchange-b")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE refused in %s (%v): the merger renames refs over there", dir, err)
	}
}

func hash(i int) plumbing.Hash { return plumbing.NewHash(fmt.Sprintf("%040x", i+1)) }

func inode(t *testing.T, name string) uint64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func update(t *testing.T, l *reflock.Locker, dir string, from, to int) {
	t.Helper()
	if err := l.Update("main", hash(from), hash(to)); err != nil {
		t.Fatalf("update %d → %d: %v", from, to, err)
	}
	if got, err := gitobj.ReadRef(dir, "main"); err != nil || got != hash(to) {
		t.Fatalf("main after update %d → %d: %s, %v", from, to, got, err)
	}
}

// TestUpdatesReuseTheRefsOldFile: from the second update on, a ref's old
// file becomes the next update's new one (two files take turns), and the
// work directory holds one spare, not one file per update.
func TestUpdatesReuseTheRefsOldFile(t *testing.T) {
	dir := bareRepo(t)
	requireExchange(t, dir)
	ref := gitobj.LoosePath(dir, "main")
	l := reflock.New(dir, gitobj.Durability{})
	update(t, l, dir, 0, 1)
	first := inode(t, ref)
	update(t, l, dir, 1, 2)
	update(t, l, dir, 2, 3)
	if got := inode(t, ref); got != first {
		t.Fatalf("the ref's file after two updates is inode %d, want the first update's %d back (exchanged, then reused)", got, first)
	}
	for i := 3; i < 20; i++ {
		update(t, l, dir, i, i+1)
	}
	spares, _ := filepath.Glob(filepath.Join(dir, reflock.WorkDir, "ref-*"))
	if len(spares) != 1 {
		t.Errorf("work directory's ref files after 20 updates: %v, want one spare", spares)
	}
	if out, err := exec.Command("git", "--git-dir", dir, "for-each-ref", "--format=%(objectname)", "refs/heads/main").Output(); err != nil {
		t.Errorf("git for-each-ref: %v", err)
	} else if string(out) != hash(20).String()+"\n" {
		t.Errorf("git reads main as %q, want %s", out, hash(20))
	}
}

// TestHeldOldRefIsNotOverwritten: a reader that opened the ref before it
// moved keeps reading the value it opened, as with git's renames, however
// many updates follow — the spare it holds is set aside, not reused.
func TestHeldOldRefIsNotOverwritten(t *testing.T) {
	dir := bareRepo(t)
	ref := gitobj.LoosePath(dir, "main")
	l := reflock.New(dir, gitobj.Durability{})
	update(t, l, dir, 0, 1)
	held, err := os.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before := inode(t, ref)
	for i := 1; i < 6; i++ {
		update(t, l, dir, i, i+1)
	}
	if inode(t, ref) == before {
		t.Errorf("the held file is the ref again")
	}
	got, err := io.ReadAll(held)
	if err != nil {
		t.Fatal(err)
	}
	if want := hash(1).String() + "\n"; string(got) != want {
		t.Errorf("a reader holding the ref from before five updates reads %q, want %q", got, want)
	}
}

// TestUnfitSpareIsReplaced: a spare that is not exactly a ref's length
// (the old ref was written with two newlines) is removed, not written
// into, and the ref gets exactly the new value.
func TestUnfitSpareIsReplaced(t *testing.T) {
	dir := bareRepo(t)
	ref := gitobj.LoosePath(dir, "main")
	if err := os.WriteFile(ref, []byte(hash(0).String()+"\n\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	l := reflock.New(dir, gitobj.Durability{})
	for i := 0; i < 3; i++ {
		update(t, l, dir, i, i+1)
		if b, err := os.ReadFile(ref); err != nil || string(b) != hash(i+1).String()+"\n" {
			t.Fatalf("ref after update %d: %q, %v", i+1, b, err)
		}
	}
}

// TestSymlinkRefIsRenamedOver: a loose ref that is a symbolic link is
// replaced by a file, as a rename does, and its target is left alone.
func TestSymlinkRefIsRenamedOver(t *testing.T) {
	dir := bareRepo(t)
	ref := gitobj.LoosePath(dir, "main")
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte(hash(0).String()+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ref); err != nil {
		t.Fatal(err)
	}
	l := reflock.New(dir, gitobj.Durability{})
	for i := 0; i < 3; i++ {
		update(t, l, dir, i, i+1)
	}
	if fi, err := os.Lstat(ref); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("ref after updates: %v, %v; want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != hash(0).String()+"\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
