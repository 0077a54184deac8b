package gitreach_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gitreach"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/repopath"
)

// TestReaches: git is the oracle — for every commit and branch of a
// repository with a merge, a side branch and a packed ref, Reaches says
// what `git merge-base --is-ancestor` says.
func TestReaches(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := gittest.NewBare(t, root, "acme/widgets",
		gittest.Commit{Name: "base", Branch: "main", Message: "base", At: at, Files: map[string]string{"a": "1"}},
		gittest.Commit{Name: "f1", Branch: "feature", Parents: []string{"base"}, Message: "f1", At: at.Add(time.Minute), Files: map[string]string{"b": "1"}},
		gittest.Commit{Name: "m1", Branch: "main", Parents: []string{"base"}, Message: "m1", At: at.Add(2 * time.Minute), Files: map[string]string{"c": "1"}},
		gittest.Commit{Name: "merge", Branch: "main", Parents: []string{"m1", "f1"}, Message: "merge", At: at.Add(3 * time.Minute)},
		gittest.Commit{Name: "side", Branch: "side", Parents: []string{"base"}, Message: "side", At: at.Add(4 * time.Minute), Files: map[string]string{"d": "1"}},
		gittest.Commit{Name: "after", Branch: "main", Parents: []string{"merge"}, Message: "after", At: at.Add(5 * time.Minute), Files: map[string]string{"e": "1"}},
	)
	r.PackRefs()
	r.Git("update-ref", "refs/heads/loose", r.SHA["m1"]) // a loose ref beside the packed ones
	rs := gitreach.New(root)
	ctx := context.Background()
	for _, branch := range []string{"main", "feature", "side", "loose"} {
		for name, sha := range r.SHA {
			got, err := rs.Reaches(ctx, "acme/widgets", branch, sha)
			if err != nil {
				t.Fatalf("Reaches(%s, %s): %v", branch, name, err)
			}
			if want := isAncestor(t, r.Dir, sha, "refs/heads/"+branch); got != want {
				t.Errorf("Reaches(%s, %s) = %v; git says %v", branch, name, got, want)
			}
		}
	}
	// Moved back, main no longer reaches the merge.
	r.Git("update-ref", "refs/heads/main", r.SHA["m1"])
	if got, err := rs.Reaches(ctx, "acme/widgets", "main", r.SHA["merge"]); err != nil || got {
		t.Errorf("Reaches(main moved back, merge) = %v, %v; want false", got, err)
	}

	for _, tc := range []struct {
		repo, branch, sha string
		want              error
	}{
		{"acme/none", "main", r.SHA["base"], repopath.ErrNotFound},
		{"acme/widgets", "gone", r.SHA["base"], gitreach.ErrBranchNotFound},
		{"acme/widgets", "main", "0123456789012345678901234567890123456789", gitreach.ErrCommitMissing},
	} {
		if _, err := rs.Reaches(ctx, tc.repo, tc.branch, tc.sha); !errors.Is(err, tc.want) {
			t.Errorf("Reaches(%s, %s, %s) = %v; want %v", tc.repo, tc.branch, tc.sha, err, tc.want)
		}
	}
	if _, err := rs.Reaches(ctx, "acme/widgets", "main", "HEAD"); err == nil {
		t.Error("Reaches with a sha that is not one: no error")
	}
	limited := gitreach.New(root)
	limited.Limit = 2
	r.Git("update-ref", "refs/heads/main", r.SHA["after"])
	if _, err := limited.Reaches(ctx, "acme/widgets", "main", r.SHA["side"]); !errors.Is(err, gitreach.ErrUndecided) {
		t.Errorf("Reaches with a limit of 2 commits = %v; want ErrUndecided", err)
	}
}

// isAncestor is git's answer: `git merge-base --is-ancestor` exits 0 for
// yes, 1 for no.
func isAncestor(t *testing.T, dir, commit, ref string) bool {
	t.Helper()
	err := exec.Command("git", "--git-dir="+dir, "merge-base", "--is-ancestor", commit, ref).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false
	}
	t.Fatalf("git merge-base --is-ancestor %s %s: %v", commit, ref, err)
	return false
}
