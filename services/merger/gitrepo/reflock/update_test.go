package reflock_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// git runs git on the bare repository dir and returns its trimmed output.
func git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitErr(dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// repoWithCommits is a bare repository made by git with a chain of n
// commits (oldest first); refs/heads/main points at the first.
func repoWithCommits(t *testing.T, n int) (string, []plumbing.Hash) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	var stream strings.Builder
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("commit %d\n", i)
		fmt.Fprintf(&stream, "commit refs/heads/seed\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata %d\n%s", i, 1700000000+i, len(msg), msg)
		if i > 1 {
			fmt.Fprintf(&stream, "from :%d\n", i-1)
		}
		stream.WriteString("\n")
	}
	git(t, dir, stream.String(), "fast-import", "--quiet")
	var commits []plumbing.Hash
	for _, s := range strings.Fields(git(t, dir, "", "rev-list", "--reverse", "refs/heads/seed")) {
		commits = append(commits, plumbing.NewHash(s))
	}
	if len(commits) != n {
		t.Fatalf("git made %d commits, want %d", len(commits), n)
	}
	git(t, dir, "", "update-ref", "refs/heads/main", commits[0].String())
	return dir, commits
}

// revParse is what git reads refs/heads/main as.
func revParse(t *testing.T, dir string) string {
	t.Helper()
	return git(t, dir, "", "rev-parse", "--verify", "refs/heads/main")
}

func inode(t *testing.T, name string) uint64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestEveryUpdateIsANewFile: each update renames a new file over the ref
// (a new inode each time), and a reader holding a former ref file keeps
// reading the value it opened, however many updates follow: no ref file,
// once in place, is written again.
func TestEveryUpdateIsANewFile(t *testing.T) {
	dir, c := repoWithCommits(t, 8)
	ref := gitobj.LoosePath(dir, "main")
	l := reflock.New(dir, gitobj.Durability{})
	var held []*os.File
	inodes := map[uint64]int{}
	for i := 0; i+1 < len(c); i++ {
		f, err := os.Open(ref)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		held = append(held, f)
		inodes[inode(t, ref)] = i
		if err := l.Update("main", c[i], c[i+1]); err != nil {
			t.Fatalf("update %d → %d: %v", i, i+1, err)
		}
		// The former ref files are held open: their inodes cannot be
		// reused, so a new file has an inode never seen here.
		if v, seen := inodes[inode(t, ref)]; seen {
			t.Fatalf("after update %d the ref is the file that held value %d", i+1, v)
		}
	}
	for i, f := range held {
		got, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := c[i].String() + "\n"; string(got) != want {
			t.Errorf("a reader holding the ref of value %d reads %q, want %q", i, got, want)
		}
	}
	if got := revParse(t, dir); got != c[len(c)-1].String() {
		t.Errorf("git reads main as %s, want %s", got, c[len(c)-1])
	}
	if left, _ := filepath.Glob(filepath.Join(dir, reflock.WorkDir, "ref-*")); len(left) > 0 {
		t.Errorf("new-value files left in the work directory: %v", left)
	}
}

// TestSymlinkRefIsRenamedOver: a loose ref that is a symbolic link is
// replaced by a file, as a rename does, and its target is left alone.
func TestSymlinkRefIsRenamedOver(t *testing.T) {
	dir, c := repoWithCommits(t, 4)
	ref := gitobj.LoosePath(dir, "main")
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte(c[0].String()+"\n"), 0o666); err != nil {
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
		if err := l.Update("main", c[i], c[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Lstat(ref); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("ref after updates: %v, %v; want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != c[0].String()+"\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if got := revParse(t, dir); got != c[3].String() {
		t.Errorf("git reads main as %s, want %s", got, c[3])
	}
}
