package gittest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Add writes the history as described: names, branches, parents (merges
// included), exact dates and files on top of the first parent's tree.
func TestNewBareAndAdd(t *testing.T) {
	root := t.TempDir()
	r := gittest.NewBare(t, root, "acme/widgets",
		gittest.Commit{Name: "a", Branch: "main", Message: "first", At: t0, Files: map[string]string{"a.txt": "a"}},
		gittest.Commit{Name: "b", Branch: "topic", Parents: []string{"a"}, Message: "second", At: t0.Add(time.Minute), Files: map[string]string{"b.txt": "b"}},
	)
	r.Add(gittest.Commit{Name: "m", Branch: "main", Parents: []string{"a", "b"}, Message: "merge", At: t0.Add(2 * time.Minute)})
	if r.Dir != filepath.Join(root, "acme", "widgets.git") {
		t.Errorf("Dir = %q, want <root>/acme/widgets.git", r.Dir)
	}
	if got := r.Git("rev-parse", "--is-bare-repository"); got != "true" {
		t.Errorf("is bare = %q", got)
	}
	if got := r.Git("symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD = %q, want refs/heads/main", got)
	}
	if r.Rev("main") != r.SHA["m"] || r.Rev("topic") != r.SHA["b"] {
		t.Errorf("main %s topic %s; want m %s, b %s", r.Rev("main"), r.Rev("topic"), r.SHA["m"], r.SHA["b"])
	}
	if got, want := r.Git("log", "--format=%s %ct %P", "-1", "main"), fmt.Sprintf("merge %d %s %s", t0.Add(2*time.Minute).Unix(), r.SHA["a"], r.SHA["b"]); got != want {
		t.Errorf("merge commit = %q, want %q", got, want)
	}
	if got := r.Git("ls-tree", "--name-only", "topic"); got != "a.txt\nb.txt" {
		t.Errorf("topic's tree = %q, want a.txt and b.txt", got)
	}
}

// Commit chains commits on a branch; PackRefs and Repack leave the
// refs and objects readable.
func TestCommitPackRefsRepack(t *testing.T) {
	r := gittest.NewBare(t, t.TempDir(), "acme/widgets")
	first := r.Commit("feature/x", "one")
	second := r.Commit("feature/x", "two")
	if got := r.Git("rev-parse", second+"^"); got != first {
		t.Errorf("parent of the second commit = %s, want %s", got, first)
	}
	r.PackRefs()
	if _, err := os.Stat(filepath.Join(r.Dir, "refs", "heads", "feature", "x")); !os.IsNotExist(err) {
		t.Errorf("loose ref still there after PackRefs: %v", err)
	}
	r.Repack()
	if got := r.Rev("feature/x"); got != second {
		t.Errorf("feature/x after PackRefs and Repack = %s, want %s", got, second)
	}
	if loose := r.Git("count-objects"); !strings.HasPrefix(loose, "0 objects") {
		t.Errorf("count-objects after Repack = %q, want no loose objects", loose)
	}
}
