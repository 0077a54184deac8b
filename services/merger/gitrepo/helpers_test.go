package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
)

// The tests work on real bare repositories made by the git command, and
// use git as the oracle: `git merge-tree --write-tree` for merge results,
// `git fsck --strict` for the repository's health.

const testRepo = "acme/widgets"

// gitTimeout bounds every git command a test runs.
const gitTimeout = 30 * time.Second

type fixture struct {
	t     *testing.T
	root  string // the repos dir
	bare  string // <root>/acme/widgets.git
	env   []string
	repos *Repos
	repo  *Repo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	gittest.Need(t)
	f := &fixture{t: t, root: t.TempDir()}
	home := t.TempDir()
	f.env = append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer", "GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_TERMINAL_PROMPT=0",
	)
	f.bare = filepath.Join(f.root, "acme", "widgets.git")
	f.git(f.root, "init", "-q", "--bare", "-b", "main", f.bare)
	var err error
	if f.repos, err = NewRepos(f.root); err != nil {
		t.Fatal(err)
	}
	if f.repo, err = f.repos.Open(testRepo); err != nil {
		t.Fatal(err)
	}
	return f
}

// gitErr runs git in dir ("" = the bare repository) and returns its stdout.
func (f *fixture) gitErr(dir string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if dir == "" {
		args = append([]string{"--git-dir=" + f.bare}, args...)
	} else {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = f.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("git %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), err
}

// git runs git in dir ("" = the bare repository), failing the test on error,
// and returns its trimmed stdout.
func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.gitErr(dir, "", args...)
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func (f *fixture) rev(rev string) string { return f.git("", "rev-parse", "--verify", "-q", rev) }

// isAncestor reports `git merge-base --is-ancestor a b`.
func (f *fixture) isAncestor(a, b string) bool {
	_, err := f.gitErr("", "", "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// fsck fails the test unless `git fsck --strict` is clean.
func (f *fixture) fsck() {
	f.t.Helper()
	if out, err := f.gitErr("", "", "fsck", "--strict", "--no-progress"); err != nil {
		f.t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
}

// mergeTree is the oracle: the tree `git merge-tree --write-tree` writes
// for merging theirs into ours, and whether git found it clean.
func (f *fixture) mergeTree(ours, theirs string) (tree string, clean bool) {
	f.t.Helper()
	out, err := f.gitErr("", "", "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	var exit *exec.ExitError
	switch {
	case err == nil:
		clean = true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		clean = false
	default:
		f.t.Fatal(err)
	}
	tree, _, _ = strings.Cut(out, "\n")
	return tree, clean
}

// grepCount counts the commits reachable from rev whose message contains s.
func (f *fixture) grepCount(rev, s string) int {
	out := f.git("", "log", "--format=%H", "-F", "--grep="+s, rev)
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// commitMessage is the raw message of a commit.
func (f *fixture) commitMessage(sha string) string {
	out, err := f.gitErr("", "", "cat-file", "commit", sha)
	if err != nil {
		f.t.Fatal(err)
	}
	_, msg, _ := strings.Cut(out, "\n\n")
	return msg
}

// diffNames lists the paths `git diff --name-only` reports, sorted.
func (f *fixture) diffNames(from, to string) []string {
	out := f.git("", "diff", "--no-renames", "--name-only", from, to)
	if out == "" {
		return nil
	}
	names := strings.Split(out, "\n")
	sort.Strings(names)
	return names
}

// file is one tree entry of a test commit: a blob with a mode, or a gitlink.
type file struct {
	mode    string // "100644", "100755", "120000" (content: link target), "160000" (content: commit sha)
	content string
}

func reg(content string) file  { return file{"100644", content} }
func exe(content string) file  { return file{"100755", content} }
func link(target string) file  { return file{"120000", target} }
func gitlink(sha string) file  { return file{"160000", sha} }
func (fl file) String() string { return fl.mode + ":" + fl.content }

// commitSpec is one commit for build: a full snapshot of files, on ref,
// with parents named by ref (as built earlier in the same call, or existing).
type commitSpec struct {
	ref     string // branch name
	parents []string
	files   map[string]file
	msg     string
}

// build writes commits with one `git fast-import` run (which stores them in
// a pack, as a push of many objects would) and returns each ref's sha.
func (f *fixture) build(specs ...commitSpec) map[string]string {
	f.t.Helper()
	var b strings.Builder
	marks := map[string]int{}
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i, s := range specs {
		mark := i + 1
		msg := s.msg
		if msg == "" {
			msg = "commit " + s.ref
		}
		fmt.Fprintf(&b, "commit refs/heads/%s\nmark :%d\ncommitter C <c@example.com> %d +0000\ndata %d\n%s\n",
			s.ref, mark, when+int64(i), len(msg), msg)
		for j, p := range s.parents {
			from := p
			if m, ok := marks[p]; ok {
				from = fmt.Sprintf(":%d", m)
			} else {
				from = f.rev(p)
			}
			if j == 0 {
				fmt.Fprintf(&b, "from %s\n", from)
			} else {
				fmt.Fprintf(&b, "merge %s\n", from)
			}
		}
		writeSnapshot(&b, s.files)
		marks[s.ref] = mark
	}
	if _, err := f.gitErr("", b.String(), "fast-import", "--quiet", "--force"); err != nil {
		f.t.Fatal(err)
	}
	shas := map[string]string{}
	for _, s := range specs {
		shas[s.ref] = f.rev("refs/heads/" + s.ref)
	}
	return shas
}

// writeSnapshot writes a fast-import commit's file commands: the whole
// snapshot, replacing the parent's tree, paths sorted.
func writeSnapshot(b *strings.Builder, files map[string]file) {
	b.WriteString("deleteall\n")
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fl := files[p]
		if fl.mode == "160000" {
			fmt.Fprintf(b, "M 160000 %s %s\n", fl.content, p)
			continue
		}
		fmt.Fprintf(b, "M %s inline %s\ndata %d\n%s\n", fl.mode, p, len(fl.content), fl.content)
	}
	b.WriteString("\n")
}

// request is a merge request for PR #n from source into target.
func request(source, target, head, strategy string, n int) MergeRequest {
	return MergeRequest{
		SourceBranch: source, TargetBranch: target, HeadSHA: head, Strategy: strategy,
		PRID: fmt.Sprintf("%s#%d", testRepo, n), PRNumber: n, CorrelationID: fmt.Sprintf("corr-%d", n),
		Title:     fmt.Sprintf("PR number %d", n),
		Author:    Signature{Name: "Alice Author", Email: "alice@example.com"},
		Committer: Signature{Name: "prsaga", Email: "prsaga@example.com"},
		When:      time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
		Journal:   testJournal,
	}
}

// merge runs Merge, failing the test on error.
func (f *fixture) merge(req MergeRequest) Result {
	f.t.Helper()
	res, err := f.repo.Merge(context.Background(), req)
	if err != nil {
		f.t.Fatalf("Merge(%s into %s, %s): %v", req.SourceBranch, req.TargetBranch, req.Strategy, err)
	}
	return res
}

// clone makes a non-bare clone of the bare repository, for pushing.
func (f *fixture) clone() string {
	dir := filepath.Join(f.t.TempDir(), "work")
	f.git(f.root, "clone", "-q", f.bare, dir)
	return dir
}
