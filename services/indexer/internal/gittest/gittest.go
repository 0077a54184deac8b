// Package gittest makes real bare repositories with the git command for the
// indexer's tests: <reposDir>/<owner>/<name>.git, history written with
// `git fast-import` so that commit times (and so walk orders) are exact.
package gittest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Commit is one commit to write. Parents name earlier commits of the same
// History by Name; the first parent comes first. Files are added to the
// first parent's tree (path → content).
type Commit struct {
	Name    string
	Branch  string // the ref the commit is written to (refs/heads/<Branch>)
	Parents []string
	Message string
	At      time.Time
	Files   map[string]string
}

// Repo is a bare repository under a repos dir.
type Repo struct {
	t    testing.TB
	home string
	Dir  string
	SHA  map[string]string // commit Name → sha
}

// NewBare creates <reposDir>/<repo>.git (repo is "owner/name") holding
// commits, in order. It skips the test when git is not installed.
func NewBare(t testing.TB, reposDir, repo string, commits ...Commit) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(reposDir, filepath.FromSlash(repo)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Repo{t: t, home: t.TempDir(), Dir: dir, SHA: map[string]string{}}
	r.git("", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	r.Add(commits...)
	return r
}

// Add writes more commits; parents may name commits of earlier calls.
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
	r.git(in.String(), "--git-dir="+r.Dir, "fast-import", "--quiet", "--force", "--export-marks="+marksFile)
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
	for name, m := range marks {
		r.SHA[name] = byMark[fmt.Sprintf(":%d", m)]
	}
}

// Repack packs every object into one new pack and deletes the old packs
// and loose objects, as `git gc` does: what a reader that loaded the old
// pack indexes must survive.
func (r *Repo) Repack() {
	r.t.Helper()
	r.git("", "--git-dir="+r.Dir, "repack", "-a", "-d", "-q")
	r.git("", "--git-dir="+r.Dir, "prune-packed")
}

func (r *Repo) git(stdin string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "HOME="+r.home, "XDG_CONFIG_HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
