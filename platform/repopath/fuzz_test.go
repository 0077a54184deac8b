package repopath_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/repopath"
)

// FuzzResolve: whatever the id, Resolve never panics, Verify agrees with it, refuses every id
// Check refuses, and what it returns is a bare repository strictly inside
// the real repos dir (the layout has links out of it to be tempted by).
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"acme/widgets", "acme/alias", "mirror/widgets", "acme/evil", "out/evil", "acme/self",
		"acme/loop", "../outside/evil", "acme/../../outside/evil", "/etc/passwd", "acme/..",
		"acme/widgets\x00", `acme\widgets`, "acme/widgets.git", "acme/.git", "./acme", "acme//widgets",
		"acme/widgets/", "ACME/widgets", "acme/" + strings.Repeat("x", 101), "acme/wïdgets", "",
	} {
		f.Add(s)
	}
	l := newLayout(f)
	realRoot := realPath(f, l.dir)
	f.Fuzz(func(t *testing.T, repo string) {
		got, err := l.root.Resolve(repo)
		if verr := l.root.Verify(repo); errKind(verr) != errKind(err) {
			t.Fatalf("Verify(%q) = %v; Resolve says %v", repo, verr, err)
		}
		if checkErr := repopath.Check(repo); checkErr != nil {
			if err == nil || !errors.Is(err, contracts.ErrInvalid) {
				t.Fatalf("Resolve(%q) = %q, %v; Check refuses it (%v), want ErrInvalid", repo, got, err, checkErr)
			}
			return
		}
		if err != nil {
			if got != "" {
				t.Fatalf("Resolve(%q) returned %q with error %v", repo, got, err)
			}
			return
		}
		rel, relErr := filepath.Rel(realRoot, got)
		if relErr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("Resolve(%q) = %q, outside the repos dir %q", repo, got, realRoot)
		}
		if p, err := l.root.Path(repo); err != nil || filepath.Dir(filepath.Dir(p)) != l.root.Dir() {
			t.Fatalf("Path(%q) = %q, %v; want two levels below %q", repo, p, err, l.root.Dir())
		}
	})
}
