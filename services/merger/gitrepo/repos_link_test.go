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
