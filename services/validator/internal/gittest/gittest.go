// Package gittest makes real bare repositories with the git command for the
// validator's tests: <reposDir>/<owner>/<name>.git, commits written with
// plumbing (no work tree), refs moved with update-ref.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a bare repository under a repos dir.
type Repo struct {
	t    testing.TB
	home string // an empty HOME: no user or system config leaks in
	Dir  string // the .git directory
}

// NewBare creates <reposDir>/<repo>.git (repo is "owner/name"). It skips the
// test when git is not installed.
func NewBare(t testing.TB, reposDir, repo string) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(reposDir, filepath.FromSlash(repo)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Repo{t: t, home: t.TempDir(), Dir: dir}
	if out, err := r.cmd("init", "--quiet", "--bare", "--initial-branch=main", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return r
}

func (r *Repo) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	if args[0] != "init" {
		cmd.Args = append([]string{"git", "--git-dir=" + r.Dir}, args...)
	}
	cmd.Env = append(os.Environ(),
		"HOME="+r.home, "XDG_CONFIG_HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
	return cmd
}

// Git runs git in the repository and returns its trimmed output; a failure
// fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := r.cmd(args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commit writes a commit with an empty tree and message msg on top of
// branch (a root commit when the branch does not exist), moves the branch to
// it and returns its sha. Use a distinct msg per commit: equal inputs within
// one second give equal shas.
func (r *Repo) Commit(branch, msg string) string {
	r.t.Helper()
	tree := r.Git("mktree") // stdin empty: the empty tree
	args := []string{"commit-tree", tree, "-m", msg}
	if out, err := r.cmd("rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output(); err == nil {
		args = append(args, "-p", strings.TrimSpace(string(out)))
	}
	sha := r.Git(args...)
	r.Git("update-ref", "refs/heads/"+branch, sha)
	return sha
}

// PackRefs moves every loose ref into packed-refs.
func (r *Repo) PackRefs() {
	r.t.Helper()
	r.Git("pack-refs", "--all", "--prune")
}
