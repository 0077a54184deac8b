package gitrefs_test

import (
	"os"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/gitrefs"
	"github.com/prsaga/prsaga/platform/gittest"
)

// TestLooseAndPacked holds both readers to git: before pack-refs a branch is
// a loose file, after it a packed-refs line, and a prefix directory or a path
// through a ref file is "no loose ref", not an error.
func TestLooseAndPacked(t *testing.T) {
	repo := gittest.NewBare(t, t.TempDir(), "acme/widgets")
	main := repo.Commit("main", "first")
	deep := repo.Commit("feature/deep/x", "feature work")
	fsys := os.DirFS(repo.Dir)

	for ref, want := range map[string]string{"refs/heads/main": main, "refs/heads/feature/deep/x": deep} {
		b, ok, err := gitrefs.Loose(fsys, ref)
		if err != nil || !ok || strings.TrimSpace(string(b)) != want {
			t.Errorf("Loose(%s) = %q, %v, %v; want %s", ref, b, ok, err, want)
		}
		if sha, ok, err := gitrefs.Packed(fsys, ref); err != nil || ok {
			t.Errorf("Packed(%s) before pack-refs = %q, %v, %v; want not found", ref, sha, ok, err)
		}
	}
	for _, ref := range []string{"refs/heads/feature/deep", "refs/heads/main/x", "refs/heads/none"} {
		if b, ok, err := gitrefs.Loose(fsys, ref); err != nil || ok {
			t.Errorf("Loose(%s) = %q, %v, %v; want no loose ref", ref, b, ok, err)
		}
	}

	repo.PackRefs()
	for ref, want := range map[string]string{"refs/heads/main": main, "refs/heads/feature/deep/x": deep} {
		if b, ok, err := gitrefs.Loose(fsys, ref); err != nil || ok {
			t.Errorf("Loose(%s) after pack-refs = %q, %v, %v; want no loose ref", ref, b, ok, err)
		}
		if sha, ok, err := gitrefs.Packed(fsys, ref); err != nil || !ok || sha != want {
			t.Errorf("Packed(%s) = %q, %v, %v; want %s", ref, sha, ok, err, want)
		}
	}
	for _, ref := range []string{"refs/heads/feature/deep", "refs/heads/mai", "refs/heads/main/x"} {
		if sha, ok, err := gitrefs.Packed(fsys, ref); err != nil || ok {
			t.Errorf("Packed(%s) = %q, %v, %v; want not found", ref, sha, ok, err)
		}
	}
}

// TestPackedSkipsHeaderAndPeeledLines: a "^<sha>" peeled line follows an
// annotated tag and names no ref; it must not be read as one.
func TestPackedSkipsHeaderAndPeeledLines(t *testing.T) {
	dir := t.TempDir()
	const tag, peeled = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	data := "# pack-refs with: peeled fully-peeled sorted \n" + tag + " refs/tags/v1\n^" + peeled + " refs/heads/main\n"
	if err := os.WriteFile(dir+"/packed-refs", []byte(data), 0o666); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	if sha, ok, err := gitrefs.Packed(fsys, "refs/tags/v1"); err != nil || !ok || sha != tag {
		t.Errorf("Packed(refs/tags/v1) = %q, %v, %v; want %s", sha, ok, err, tag)
	}
	if sha, ok, err := gitrefs.Packed(fsys, "refs/heads/main"); err != nil || ok {
		t.Errorf("Packed(refs/heads/main) = %q, %v, %v; want not found (only a peeled line names it)", sha, ok, err)
	}
}
