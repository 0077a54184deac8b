package gitrepo_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// A repository reached through a symbolic link inside the repos dir opens;
// one whose link leads out of the repos dir does not (platform/repopath).
func TestOpenFollowsLinksOnlyInsideTheReposDir(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repos")
	for _, dir := range []string{filepath.Join(root, "acme", "widgets.git"), filepath.Join(base, "outside", "evil.git")} {
		if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	for link, target := range map[string]string{
		"alias.git": filepath.Join(root, "acme", "widgets.git"),
		"evil.git":  filepath.Join(base, "outside", "evil.git"),
	} {
		if err := os.Symlink(target, filepath.Join(root, "acme", link)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := gitrepo.NewRepos(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Open("acme/alias"); err != nil {
		t.Errorf("Open through a link inside the repos dir: %v", err)
	}
	r, err := rs.Open("acme/evil")
	if err == nil {
		t.Fatalf("Open through a link out of the repos dir = %v, nil; want an error", r.Name())
	}
	if errors.Is(err, gitrepo.ErrInvalid) {
		t.Errorf("Open(acme/evil) = %v; a valid id, want no ErrInvalid", err)
	}
}

// A repository the merger has opened before and that is then replaced by
// a link out of the repos dir is refused on its next open: the merger
// keeps opened repositories, and must not follow the swap.
func TestOpenRefusesARepositorySwappedForALinkOut(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repos")
	dir := filepath.Join(root, "acme", "widgets.git")
	outside := filepath.Join(base, "outside", "evil.git")
	for _, d := range []string{dir, outside} {
		if out, err := exec.Command("git", "init", "-q", "--bare", d).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	rs, err := gitrepo.NewRepos(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Open("acme/widgets"); err != nil {
		t.Fatalf("first open: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if r, err := rs.Open("acme/widgets"); err == nil {
		t.Fatalf("open after the swap = %v, nil; want it refused (a link out of the repos dir)", r.Name())
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Open("acme/widgets"); !errors.Is(err, gitrepo.ErrRepoNotFound) {
		t.Errorf("open after the repository was removed: %v, want ErrRepoNotFound", err)
	}
}
