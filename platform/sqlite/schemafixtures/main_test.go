package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every earlier schema version in the history has its committed fixture,
// and no fixture is of a version the history does not have: a migration
// added without running the generator fails here. It needs the history
// (git and a full clone), and says so when it has not.
func TestFixturesAreCurrent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP: no git to read the migrations' history")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	if out, err := exec.Command("git", "rev-parse", "--is-shallow-repository").Output(); err != nil || strings.TrimSpace(string(out)) != "false" {
		t.Skipf("SKIP: the migrations' history is not here (shallow: %q, %v)", out, err)
	}
	for _, s := range stores {
		versions, err := earlierVersions(s)
		if err != nil {
			t.Fatalf("%s: %v", s.service, err)
		}
		var want []string
		for _, v := range versions {
			want = append(want, v.date+"-"+v.commit[:7]+".db")
		}
		files, err := filepath.Glob(filepath.Join(s.out, "*.db"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			got = append(got, filepath.Base(f))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s fixtures in %s: %v; the history's earlier versions: %v (run go run ./platform/sqlite/schemafixtures)", s.service, s.out, got, want)
		}
	}
	if _, err := os.Stat(platformDir); err != nil {
		t.Fatal(err)
	}
}
