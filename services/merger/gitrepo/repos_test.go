package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenRejectsInvalidRepoIDs(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{
		"", "acme", "acme/", "/widgets", "acme/widgets/x", "../widgets", "acme/..", "acme/.", "./widgets",
		"acme/wid..gets", "/etc/passwd", "acme/wid gets", `acme\widgets`, "acme/widgets.git", "acme/w%2fx",
	} {
		if _, err := f.repos.Open(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%q) error = %v, want ErrInvalid", id, err)
		}
		if _, err := f.repos.Init(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("Init(%q) error = %v, want ErrInvalid", id, err)
		}
	}
	entries, err := os.ReadDir(f.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "acme" {
		t.Errorf("repos dir holds %v, want only acme/", entries)
	}
}

func TestOpenMissingOrNonBareRepo(t *testing.T) {
	f := newFixture(t)
	if _, err := f.repos.Open("acme/nothing"); !errors.Is(err, ErrRepoNotFound) {
		t.Errorf("Open of a missing repository: error = %v, want ErrRepoNotFound", err)
	}
	// A non-bare checkout at the path: its git directory is elsewhere.
	f.git(f.root, "init", "-q", filepath.Join(f.root, "acme", "checkout.git"))
	if _, err := f.repos.Open("acme/checkout"); !errors.Is(err, ErrRepoNotFound) {
		t.Errorf("Open of a non-bare repository: error = %v, want ErrRepoNotFound", err)
	}
}

func TestOpenKeepsRepositories(t *testing.T) {
	f := newFixture(t)
	again, err := f.repos.Open(testRepo)
	if err != nil {
		t.Fatal(err)
	}
	if again != f.repo {
		t.Error("a second Open returned a different *Repo; want the cached one")
	}
	if again.Name() != testRepo {
		t.Errorf("Name() = %q, want %q", again.Name(), testRepo)
	}
}

func TestInitCreatesBareRepoOnMain(t *testing.T) {
	f := newFixture(t)
	r, err := f.repos.Init("acme/demo")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, "acme", "demo.git")
	if got := f.git(f.root, "--git-dir="+dir, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD -> %q, want refs/heads/main", got)
	}
	if got := f.git(f.root, "--git-dir="+dir, "rev-parse", "--is-bare-repository"); got != "true" {
		t.Errorf("is bare = %q", got)
	}
	if _, err := r.Head("main"); !errors.Is(err, ErrBranchNotFound) {
		t.Errorf("Head(main) of an empty repository: error = %v, want ErrBranchNotFound", err)
	}
	if _, err := f.repos.Init("acme/demo"); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Init: error = %v, want os.ErrExist", err)
	}
	if again, err := f.repos.Open("acme/demo"); err != nil || again != r {
		t.Errorf("Open after Init = %p, %v; want the same *Repo", again, err)
	}
}

func TestHeadReadsLooseAndPackedRefs(t *testing.T) {
	f := newFixture(t)
	shas := f.build(
		commitSpec{ref: "main", files: map[string]file{"a": reg("a\n")}},
		commitSpec{ref: "feature/x", parents: []string{"main"}, files: map[string]file{"a": reg("b\n")}},
	)
	check := func(when string) {
		t.Helper()
		for branch, want := range shas {
			if got, err := f.repo.Head(branch); err != nil || got != want {
				t.Errorf("%s: Head(%s) = %s, %v; want %s", when, branch, got, err, want)
			}
		}
	}
	check("loose")
	f.git("", "pack-refs", "--all", "--prune")
	if _, err := os.Stat(filepath.Join(f.bare, "refs", "heads", "main")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pack-refs left a loose ref: %v", err)
	}
	check("packed")
	// A loose ref overrides its packed value.
	f.git("", "update-ref", "refs/heads/main", shas["feature/x"])
	if got, _ := f.repo.Head("main"); got != shas["feature/x"] {
		t.Errorf("Head(main) = %s, want the loose value %s", got, shas["feature/x"])
	}
	for branch, want := range map[string]error{"nope": ErrBranchNotFound, "feature": ErrBranchNotFound, "../HEAD": ErrInvalid, "a..b": ErrInvalid} {
		if _, err := f.repo.Head(branch); !errors.Is(err, want) {
			t.Errorf("Head(%q) error = %v, want %v", branch, err, want)
		}
	}
}
