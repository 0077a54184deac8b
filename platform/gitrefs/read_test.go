package gitrefs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
	testLooseAndPacked(t, repo, os.DirFS(repo.Dir))
}

// TestLooseAndPackedThroughDir is TestLooseAndPacked through a Dir, as the
// validator reads refs.
func TestLooseAndPackedThroughDir(t *testing.T) {
	repo := gittest.NewBare(t, t.TempDir(), "acme/widgets")
	d, err := gitrefs.OpenDir(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	testLooseAndPacked(t, repo, d)
}

func testLooseAndPacked(t *testing.T, repo *gittest.Repo, fsys fs.FS) {
	main := repo.Commit("main", "first")
	deep := repo.Commit("feature/deep/x", "feature work")

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

// TestDirConfinedAsOsRoot holds a Dir (openat2 on Linux) to os.Root on the
// same names: the same content, or both refusing — a missing file, a
// directory, "..", an absolute path, and symbolic links, in the directory
// and out of it, relative and absolute.
func TestDirConfinedAsOsRoot(t *testing.T) {
	t.Run("openat2", testDirConfinedAsOsRoot)
	// Where openat2 is missing the Dir reads through os.Root itself; the
	// answers must be the same.
	t.Run("os.Root", func(t *testing.T) {
		defer gitrefs.WithoutOpenat2()()
		testDirConfinedAsOsRoot(t)
	})
}

func testDirConfinedAsOsRoot(t *testing.T) {
	base := t.TempDir()
	git := filepath.Join(base, "repo.git")
	for name, content := range map[string]string{
		"repo.git/refs/heads/main":  "1111111111111111111111111111111111111111\n",
		"repo.git/packed-refs":      "# pack-refs with: peeled\n",
		"secret":                    "outside\n",
		"repo.git/refs/heads/a/b/c": "2222222222222222222222222222222222222222\n",
	} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"refs/heads/inside":      "main",
		"refs/heads/up-inside":   "../heads/a/b/c",
		"refs/heads/dir-link":    "a",
		"refs/heads/out":         "../../../secret",
		"refs/heads/out-abs":     filepath.Join(base, "secret"),
		"refs/heads/in-abs":      filepath.Join(git, "refs/heads/main"),
		"refs/heads/dangling":    "nowhere",
		"refs/heads/loop":        "loop",
		"refs/heads/via-out/x":   "../../../../secret",
		"refs/heads/proc-magic":  "/proc/self/root" + filepath.Join(base, "secret"),
		"refs/heads/out-dir":     "../../..",
		"refs/heads/out-dir-abs": base,
	} {
		p := filepath.Join(git, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	root, rerr := os.OpenRoot(git)
	d, derr := gitrefs.OpenDir(git)
	if err := errors.Join(rerr, derr); err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	defer d.Close()

	read := 0
	for _, name := range []string{
		"refs/heads/main", "packed-refs", "refs/heads/a/b/c", "refs/heads/inside", "refs/heads/up-inside",
		"refs/heads/dir-link/b/c", "refs/heads/in-abs",
		"refs/heads/none", "refs/heads", "refs/heads/main/x", "refs/heads/dangling", "refs/heads/loop",
		"refs/heads/out", "refs/heads/out-abs", "refs/heads/via-out/x", "refs/heads/proc-magic",
		"refs/heads/out-dir/secret", "refs/heads/out-dir-abs/secret", "../secret", "/etc/hostname",
		"refs/../../secret", "refs/heads/../../packed-refs", "", ".",
	} {
		want, werr := fs.ReadFile(root.FS(), name)
		got, gerr := d.ReadFile(name)
		if (werr == nil) != (gerr == nil) || string(got) != string(want) {
			t.Errorf("ReadFile(%q) = %q, %v; os.Root: %q, %v", name, got, gerr, want, werr)
			continue
		}
		if werr == nil {
			read++
			continue
		}
		if errors.Is(werr, fs.ErrNotExist) != errors.Is(gerr, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q) error %v, os.Root's %v: not both \"not exist\"", name, gerr, werr)
		}
		if strings.Contains(string(got), "outside") {
			t.Errorf("ReadFile(%q) read the file outside the directory", name)
		}
	}
	if read < 6 {
		t.Errorf("only %d names read; the setup is off", read)
	}
	if _, err := d.Stat("refs/heads/main"); err != nil {
		t.Errorf("Stat(refs/heads/main) = %v", err)
	}
	if _, err := d.Stat("reftable"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(reftable) = %v, want not exist", err)
	}
}
