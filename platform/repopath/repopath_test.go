package repopath_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/repopath"
)

// mkBare lays out what git takes for a bare repository: HEAD, objects/,
// refs/ (TestResolveAgreesWithGit holds the layout to git's own).
func mkBare(t testing.TB, dir string) string {
	t.Helper()
	for _, sub := range []string{"objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func realPath(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// layout is a repos dir with repositories reached directly and through
// links that stay inside it, and links that lead out of it.
type layout struct {
	base, dir string
	root      repopath.Root
}

func newLayout(t testing.TB) layout {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "repos")
	mkBare(t, filepath.Join(dir, "acme", "widgets.git"))
	mkBare(t, filepath.Join(dir, "other", "gadgets.git"))
	mkBare(t, filepath.Join(base, "outside", "evil.git"))
	if err := os.MkdirAll(filepath.Join(dir, "acme", "empty.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A checkout, not a bare repository: its git directory is one below.
	mkBare(t, filepath.Join(dir, "acme", "checkout.git", ".git"))
	if err := os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(dir, "acme", "widgets.git"), filepath.Join(dir, "acme", "alias.git"))
	symlink(t, "../other/gadgets.git", filepath.Join(dir, "acme", "relative.git"))
	symlink(t, filepath.Join(dir, "acme"), filepath.Join(dir, "mirror"))
	symlink(t, filepath.Join(base, "outside", "evil.git"), filepath.Join(dir, "acme", "evil.git"))
	symlink(t, "../../outside/evil.git", filepath.Join(dir, "acme", "relevil.git"))
	symlink(t, filepath.Join(base, "outside"), filepath.Join(dir, "out"))
	symlink(t, dir, filepath.Join(dir, "acme", "self.git")) // the repos dir itself
	symlink(t, "loop.git", filepath.Join(dir, "acme", "loop.git"))
	return layout{base: base, dir: dir, root: repopath.New(dir)}
}

func TestResolve(t *testing.T) {
	l := newLayout(t)
	widgets := realPath(t, filepath.Join(l.dir, "acme", "widgets.git"))
	gadgets := realPath(t, filepath.Join(l.dir, "other", "gadgets.git"))
	const (
		ok = iota
		invalid
		notFound
		outside
		other
	)
	for _, tc := range []struct {
		name, repo string
		want       int
		dir        string // for ok
	}{
		{"a repository", "acme/widgets", ok, widgets},
		{"a link to a repository inside", "acme/alias", ok, widgets},
		{"a relative link inside", "acme/relative", ok, gadgets},
		{"an owner linked inside", "mirror/widgets", ok, widgets},
		{"missing repository", "acme/nothing", notFound, ""},
		{"missing owner", "nobody/widgets", notFound, ""},
		{"owner is a file", "afile/widgets", notFound, ""},
		{"empty directory", "acme/empty", notFound, ""},
		{"non-bare checkout", "acme/checkout", notFound, ""},
		{"a link out of the repos dir", "acme/evil", outside, ""},
		{"a relative link out", "acme/relevil", outside, ""},
		{"an owner linked out", "out/evil", outside, ""},
		{"a link to the repos dir itself", "acme/self", outside, ""},
		{"a link loop", "acme/loop", other, ""},
		{"empty", "", invalid, ""},
		{"one part", "acme", invalid, ""},
		{"three parts", "acme/widgets/x", invalid, ""},
		{"empty owner", "/widgets", invalid, ""},
		{"empty name", "acme/", invalid, ""},
		{"dot-dot name", "acme/..", invalid, ""},
		{"dot-dot owner", "../widgets", invalid, ""},
		{"dot-dot inside", "acme/../../outside/evil", invalid, ""},
		{"dot", "acme/.", invalid, ""},
		{"absolute", "/etc/passwd", invalid, ""},
		{"NUL", "acme/widgets\x00", invalid, ""},
		{"backslash", `acme\widgets`, invalid, ""},
		{"space", "acme/wid gets", invalid, ""},
		{"escaped slash", "acme/w%2fx", invalid, ""},
		{"git suffix", "acme/widgets.git", invalid, ""},
		{"lock suffix", "acme/widgets.lock", invalid, ""},
		{"too long", "acme/" + strings.Repeat("w", 101), invalid, ""},
		{"non-ASCII", "acme/wïdgets", invalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.root.Resolve(tc.repo)
			kind := ok
			switch {
			case err == nil:
			case errors.Is(err, contracts.ErrInvalid):
				kind = invalid
			case errors.Is(err, repopath.ErrNotFound):
				kind = notFound
			case errors.Is(err, repopath.ErrOutside):
				kind = outside
			default:
				kind = other
			}
			if kind != tc.want {
				t.Fatalf("Resolve(%q) = %q, %v; want kind %d, got kind %d", tc.repo, got, err, tc.want, kind)
			}
			if tc.want == ok && got != tc.dir {
				t.Errorf("Resolve(%q) = %q, want %q", tc.repo, got, tc.dir)
			}
			if err != nil && got != "" {
				t.Errorf("Resolve(%q) returned %q with its error", tc.repo, got)
			}
			if err != nil && !strings.Contains(err.Error(), "repo") {
				t.Errorf("Resolve(%q) error %q does not name the repository", tc.repo, err)
			}
		})
	}
}

func TestResolveMissingOrLinkedReposDir(t *testing.T) {
	base := t.TempDir()
	if _, err := repopath.New(filepath.Join(base, "none")).Resolve("acme/widgets"); !errors.Is(err, repopath.ErrNotFound) {
		t.Errorf("Resolve under a missing repos dir = %v, want ErrNotFound", err)
	}
	// The repos dir may itself be a link: its target is the root.
	want := mkBare(t, filepath.Join(base, "real", "acme", "widgets.git"))
	symlink(t, filepath.Join(base, "real"), filepath.Join(base, "link"))
	got, err := repopath.New(filepath.Join(base, "link")).Resolve("acme/widgets")
	if err != nil || got != realPath(t, want) {
		t.Errorf("Resolve under a linked repos dir = %q, %v; want %q", got, err, want)
	}
}

func TestPath(t *testing.T) {
	root := repopath.New("relative/repos")
	if !filepath.IsAbs(root.Dir()) {
		t.Errorf("Dir() = %q, want an absolute path", root.Dir())
	}
	got, err := root.Path("acme/widgets")
	if want := filepath.Join(root.Dir(), "acme", "widgets.git"); err != nil || got != want {
		t.Errorf("Path = %q, %v; want %q", got, err, want)
	}
	for _, repo := range []string{"", "acme", "../x", "acme/..", "/etc/passwd", "a/b/c", "acme/x\x00"} {
		if got, err := root.Path(repo); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Path(%q) = %q, %v; want ErrInvalid", repo, got, err)
		}
	}
}

// The layout mkBare writes is the one git writes: a `git init --bare`
// resolves, a `git init` checkout does not.
func TestResolveAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "--bare", filepath.Join(dir, "acme", "bare.git")},
		{"init", "-q", filepath.Join(dir, "acme", "work.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	root := repopath.New(dir)
	if _, err := root.Resolve("acme/bare"); err != nil {
		t.Errorf("Resolve of git init --bare: %v", err)
	}
	if _, err := root.Resolve("acme/work"); !errors.Is(err, repopath.ErrNotFound) {
		t.Errorf("Resolve of a git init checkout = %v, want ErrNotFound", err)
	}
}
