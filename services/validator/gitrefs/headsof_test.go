package gitrefs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/gitrefs"
)

// HeadsOf answers what Head answers for each branch in turn, loose or
// packed, and stops at the first branch that fails, naming it.
func TestHeadsOfAgreesWithHead(t *testing.T) {
	dir := t.TempDir()
	repo := gittest.NewBare(t, dir, "acme/widgets")
	main1 := repo.Commit("main", "first")
	feat := repo.Commit("feature/x", "feature work")
	h := gitrefs.New(dir)
	check := func(label string, want ...string) {
		t.Helper()
		got, err := h.HeadsOf("acme/widgets", "feature/x", "main")
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: HeadsOf = %v, %v; want %v", label, got, err, want)
		}
		for i, b := range []string{"feature/x", "main"} {
			if sha, err := h.Head("acme/widgets", b); err != nil || sha != want[i] {
				t.Errorf("%s: Head(%s) = %q, %v; want %q", label, b, sha, err, want[i])
			}
		}
	}
	check("loose", feat, main1)
	repo.PackRefs()
	check("packed", feat, main1)
	main2 := repo.Commit("main", "second")
	check("loose over packed", feat, main2)

	for _, tc := range []struct {
		name, repo string
		branches   []string
		want       error
		names      string
	}{
		{"missing first branch", "acme/widgets", []string{"nope", "main"}, validator.ErrNotFound, "branch nope"},
		{"missing second branch", "acme/widgets", []string{"main", "nope"}, validator.ErrNotFound, "branch nope"},
		{"missing repository", "acme/gadgets", []string{"main", "main"}, validator.ErrNotFound, "acme/gadgets"},
	} {
		shas, err := h.HeadsOf(tc.repo, tc.branches...)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.names) || shas != nil {
			t.Errorf("%s: HeadsOf(%s, %v) = %v, %v; want an error matching %v naming %q", tc.name, tc.repo, tc.branches, shas, err, tc.want, tc.names)
		}
	}
}

// BenchmarkHeads reads a request's two heads: by two Head calls, and by
// one HeadsOf (the repository looked up and opened once).
func BenchmarkHeads(b *testing.B) {
	dir := b.TempDir()
	repo := gittest.NewBare(b, dir, "acme/widgets")
	repo.Commit("main", "first")
	repo.Commit("feature/x", "feature work")
	h := gitrefs.New(dir)
	b.Run("Head×2", func(b *testing.B) {
		for range b.N {
			if _, err := h.Head("acme/widgets", "feature/x"); err != nil {
				b.Fatal(err)
			}
			if _, err := h.Head("acme/widgets", "main"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HeadsOf", func(b *testing.B) {
		for range b.N {
			if _, err := h.HeadsOf("acme/widgets", "feature/x", "main"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
