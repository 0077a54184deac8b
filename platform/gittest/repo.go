package gittest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a bare repository under a repos dir.
type Repo struct {
	t   testing.TB
	Dir string            // the bare repository (the git directory)
	SHA map[string]string // Commit.Name → sha, of the commits Add wrote
}

// NewBare creates <reposDir>/<repo>.git (repo is "owner/name") with HEAD on
// main, holding commits written in order (see Add). It skips the test
// when git is not installed.
func NewBare(t testing.TB, reposDir, repo string, commits ...Commit) *Repo {
	t.Helper()
	Need(t)
	dir := filepath.Join(reposDir, filepath.FromSlash(repo)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	Run(t, "", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	r := &Repo{t: t, Dir: dir, SHA: map[string]string{}}
	r.Add(commits...)
	return r
}

// Git runs git on the repository and returns its trimmed output; a
// failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return r.GitInput("", args...)
}

// GitInput is Git with stdin (a fast-import stream, a tree to mktree).
func (r *Repo) GitInput(stdin string, args ...string) string {
	r.t.Helper()
	return RunInput(r.t, "", stdin, append([]string{"--git-dir=" + r.Dir}, args...)...)
}

// Rev returns the sha rev names; a rev that does not resolve fails the test.
func (r *Repo) Rev(rev string) string {
	r.t.Helper()
	return r.Git("rev-parse", "--verify", "--quiet", rev)
}

// Commit is one commit for Add. Parents name earlier commits (of this
// call or an earlier one) by Name; the first parent comes first. The tree
// is the first parent's with Files (path → content) added.
type Commit struct {
	Name    string
	Branch  string // the commit is written to refs/heads/<Branch>
	Parents []string
	Message string
	At      time.Time // author and committer date (UTC)
	Files   map[string]string
}

// Add writes commits in order with git fast-import and records their shas
// in SHA.
func (r *Repo) Add(commits ...Commit) {
	r.t.Helper()
	if len(commits) == 0 {
		return
	}
	var in strings.Builder
	marks := map[string]int{}
	for i, c := range commits {
		marks[c.Name] = i + 1
		fmt.Fprintf(&in, "commit refs/heads/%s\nmark :%d\n", c.Branch, i+1)
		fmt.Fprintf(&in, "committer Test <test@example.com> %d +0000\n", c.At.Unix())
		fmt.Fprintf(&in, "data %d\n%s\n", len(c.Message), c.Message)
		for j, p := range c.Parents {
			ref := r.SHA[p]
			if m, ok := marks[p]; ok {
				ref = fmt.Sprintf(":%d", m)
			}
			if ref == "" {
				r.t.Fatalf("commit %s: unknown parent %s", c.Name, p)
			}
			if j == 0 {
				fmt.Fprintf(&in, "from %s\n", ref)
			} else {
				fmt.Fprintf(&in, "merge %s\n", ref)
			}
		}
		if len(c.Parents) == 0 {
			// fast-import continues the branch unless told otherwise.
			in.WriteString("deleteall\n")
		}
		for p, content := range c.Files {
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(content), content)
		}
		in.WriteString("\n")
	}
	marksFile := filepath.Join(r.t.TempDir(), "marks")
	r.GitInput(in.String(), "fast-import", "--quiet", "--force", "--export-marks="+marksFile)
	f, err := os.Open(marksFile)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	byMark := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mark, sha, _ := strings.Cut(sc.Text(), " ")
		byMark[mark] = sha
	}
	if err := sc.Err(); err != nil {
		r.t.Fatal(err)
	}
	for name, m := range marks {
		r.SHA[name] = byMark[fmt.Sprintf(":%d", m)]
	}
}

// Commit writes a commit with an empty tree and message msg on top of
// branch (a root commit when the branch does not exist), moves the branch
// to it and returns its sha. Use a distinct msg per commit: equal inputs
// within one second give equal shas.
func (r *Repo) Commit(branch, msg string) string {
	r.t.Helper()
	tree := r.Git("mktree") // stdin empty: the empty tree
	args := []string{"commit-tree", tree, "-m", msg}
	if parent, ok := r.head(branch); ok {
		args = append(args, "-p", parent)
	}
	sha := r.Git(args...)
	r.Git("update-ref", "refs/heads/"+branch, sha)
	return sha
}

// head is branch's sha, if the branch exists.
func (r *Repo) head(branch string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+r.Dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	cmd.Env = env()
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err == nil
}

// PackRefs moves every loose ref into packed-refs.
func (r *Repo) PackRefs() {
	r.t.Helper()
	r.Git("pack-refs", "--all", "--prune")
}

// Repack packs every object into one new pack and deletes the old packs
// and loose objects, as `git gc` does: what a reader that loaded the old
// pack indexes must survive.
func (r *Repo) Repack() {
	r.t.Helper()
	r.Git("repack", "-a", "-d", "-q")
	r.Git("prune-packed")
}
