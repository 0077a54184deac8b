package gitrefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/gitrefs"
)

func TestHeadLooseAndPacked(t *testing.T) {
	dir := t.TempDir()
	repo := gittest.NewBare(t, dir, "acme/widgets")
	main1 := repo.Commit("main", "first")
	feat := repo.Commit("feature/deep/x", "feature work")
	h := gitrefs.New(dir)

	check := func(branch, want string) {
		t.Helper()
		got, err := h.Head("acme/widgets", branch)
		if err != nil || got != want {
			t.Errorf("Head(%s) = %q, %v; want %q, nil", branch, got, err, want)
		}
	}
	check("main", main1)
	check("feature/deep/x", feat)

	repo.PackRefs()
	if _, err := os.Stat(filepath.Join(repo.Dir, "refs/heads/main")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after pack-refs the loose ref still exists (stat err %v): the test would not read packed-refs", err)
	}
	check("main", main1)
	check("feature/deep/x", feat)

	// A loose ref written after packing wins over the stale packed value,
	// and every call reads afresh.
	main2 := repo.Commit("main", "second")
	if main2 == main1 {
		t.Fatal("second commit has the first one's sha")
	}
	check("main", main2)
	check("feature/deep/x", feat)
}

func TestHeadFollowsSymbolicRef(t *testing.T) {
	dir := t.TempDir()
	repo := gittest.NewBare(t, dir, "acme/widgets")
	sha := repo.Commit("main", "first")
	repo.Git("symbolic-ref", "refs/heads/alias", "refs/heads/main")
	got, err := gitrefs.New(dir).Head("acme/widgets", "alias")
	if err != nil || got != sha {
		t.Errorf("Head(alias) = %q, %v; want %q (main's head)", got, err, sha)
	}
}

func TestHeadMissing(t *testing.T) {
	dir := t.TempDir()
	repo := gittest.NewBare(t, dir, "acme/widgets")
	repo.Commit("main", "first")
	repo.Commit("a/b", "nested")
	mkdirAll(t, filepath.Join(dir, "acme", "notarepo.git"))
	h := gitrefs.New(dir)
	headFails(t, h, validator.ErrNotFound, []headCase{
		{"no such repository", "acme/gadgets", "main"},
		{"no such owner", "nobody/widgets", "main"},
		{"directory that is not a repository", "acme/notarepo", "main"},
		{"no such branch", "acme/widgets", "nope"},
		{"branch that is only a prefix of a ref", "acme/widgets", "a"},
		{"branch below a ref", "acme/widgets", "main/sub"},
	})
	repo.PackRefs()
	if _, err := h.Head("acme/widgets", "nope"); !errors.Is(err, validator.ErrNotFound) {
		t.Errorf("Head(nope) with packed refs: err = %v, want ErrNotFound", err)
	}
	if _, err := gitrefs.New(filepath.Join(dir, "absent")).Head("acme/widgets", "main"); !errors.Is(err, validator.ErrNotFound) {
		t.Errorf("Head with a missing repos dir: err = %v, want ErrNotFound", err)
	}
}

func TestHeadRefusesBadIDs(t *testing.T) {
	base := t.TempDir()
	// A repository outside the repos dir that traversal would reach.
	outside := gittest.NewBare(t, base, "evil/repo")
	outside.Commit("main", "outside")
	dir := filepath.Join(base, "repos")
	mkdirAll(t, filepath.Join(dir, "acme"))
	inside := gittest.NewBare(t, dir, "acme/widgets")
	inside.Commit("main", "inside")
	// A symlink inside the repos dir pointing out of it.
	if err := os.Symlink(filepath.Join(base, "evil"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	h := gitrefs.New(dir)
	headFails(t, h, contracts.ErrInvalid, []headCase{
		{"dot-dot owner", "../evil/repo", "main"},
		{"dot-dot name", "acme/../../evil/repo", "main"},
		{"dot-dot part", "../evil", "main"},
		{"absolute", "/etc/passwd", "main"},
		{"three parts", "acme/widgets/x", "main"},
		{"branch escaping refs", "acme/widgets", "../../../../evil/repo.git/refs/heads/main"},
		{"branch dot component", "acme/widgets", "a/.hidden"},
		{"branch HEAD", "acme/widgets", "HEAD"},
	})
	// A valid id that reaches outside through a symlink is refused too.
	sha, err := h.Head("link/repo", "main")
	if err == nil {
		t.Errorf("Head(link/repo) through a symlink out of the repos dir = %q, nil; want an error", sha)
	}
}

type headCase struct{ name, repo, branch string }

// headFails checks that Head refuses every case with an error matching want.
func headFails(t *testing.T, h *gitrefs.Heads, want error, cases []headCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sha, err := h.Head(tc.repo, tc.branch)
			if !errors.Is(err, want) {
				t.Errorf("Head(%q, %q) = %q, %v; want an error matching %v", tc.repo, tc.branch, sha, err, want)
			}
		})
	}
}

func mkdirAll(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
