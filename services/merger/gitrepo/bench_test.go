package gitrepo

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/gittest"
)

// BenchmarkMerge merges a PR into a repository of 2,000 files, with 500 and
// with 5,000 commits of history: the PR forked 10 commits before main's
// head, changes three files — one of them also changed on main since, so
// its lines are merged — and adds one. Each iteration merges anew (the
// branch is reset, the commit time differs): merge bases, already-merged
// search, tree and line merge, objects written, ref moved.
//
// merge and squash are a merger's steady state with PRSAGA_DURABILITY
// process: the repository stays open, so its parsed objects and commit
// graph are warm after the first iteration. merge-sync is the same with
// PRSAGA_DURABILITY=sync (objects, the ref and their directories
// fsynced). merge-cold is a merger's first merge into the repository (a
// fresh Repos each iteration: the commit graph is built from the whole
// history). merge-base-only is the merge bases alone, warm.
//
//	go test ./gitrepo -run '^$' -bench BenchmarkMerge -benchtime 20x
//
// The repositories are built once per run, with git fast-import, in a temp
// dir; PERFORMANCE.md has the figures.
func BenchmarkMerge(b *testing.B) {
	gittest.Need(b)
	const files = 2000
	for _, history := range []int{500, 5000} {
		root := b.TempDir()
		built := time.Now()
		main, feature := buildBenchRepo(b, root, files, history)
		b.Logf("built %d files, %d commits in %s", files, history, time.Since(built).Round(time.Millisecond))
		open := func(opts Options) *Repo { return openBenchRepo(b, root, opts) }
		repo, syncRepo := open(Options{}), open(Options{Sync: true})
		for _, v := range []struct {
			name     string
			strategy string
			repo     func() *Repo
		}{
			{"merge", StrategyMerge, func() *Repo { return repo }},
			{"squash", StrategySquash, func() *Repo { return repo }},
			{"merge-sync", StrategyMerge, func() *Repo { return syncRepo }},
			{"merge-cold", StrategyMerge, func() *Repo { return open(Options{}) }},
		} {
			b.Run(fmt.Sprintf("files=%d/history=%d/%s", files, history, v.name), func(b *testing.B) {
				req := request("feature", "main", feature, v.strategy, 1)
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					mergeAnew(b, v.repo(), main, req, i)
				}
			})
		}
		b.Run(fmt.Sprintf("files=%d/history=%d/merge-base-only", files, history), func(b *testing.B) {
			defer repo.store.Session()() // as in a merge
			mc, err := repo.store.Commit(plumbing.NewHash(main))
			if err != nil {
				b.Fatal(err)
			}
			fc, err := repo.store.Commit(plumbing.NewHash(feature))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := repo.history.MergeBases(context.Background(), mc, fc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// buildBenchRepo writes acme/widgets under root with fast-import: an
// initial commit of n files of 20 lines, history-1 more commits on main
// each changing one line of one file, and a PR branch "feature" forked 10
// commits before main's head. It returns main's and feature's heads.
func buildBenchRepo(b *testing.B, root string, n, history int) (main, feature string) {
	b.Helper()
	dir := filepath.Join(root, "acme", "widgets.git")
	git := func(stdin string, args ...string) string {
		b.Helper()
		return benchGit(b, root, stdin, args...)
	}
	git("", "init", "-q", "--bare", "-b", "main", dir)

	version := make([][20]int, n) // version[f][l]: the version of file f's line l
	path := func(f int) string { return fmt.Sprintf("dir%02d/sub%d/file%04d.txt", f%40, f%7, f) }
	content := func(f int) string {
		var s strings.Builder
		for l, v := range version[f] {
			fmt.Fprintf(&s, "file %d line %d version %d\n", f, l, v)
		}
		return s.String()
	}
	var s strings.Builder
	// commit writes a commit of the changed files' contents; extra is
	// more fast-import file commands.
	commit := func(branch string, mark int, from, extra string, changed ...int) {
		fmt.Fprintf(&s, "commit refs/heads/%s\nmark :%d\ncommitter C <c@example.com> %d +0000\ndata 8\ncommit %d\n",
			branch, mark, 1700000000+mark, mark%10)
		if from != "" {
			fmt.Fprintf(&s, "from %s\n", from)
		}
		for _, f := range changed {
			fastImportFile(&s, path(f), content(f))
		}
		s.WriteString(extra + "\n")
	}
	all := make([]int, n)
	for f := range all {
		all[f] = f
	}
	commit("main", 1, "", "", all...)
	// Files the PR changes: shared (main changes it too, in its last
	// commit), only (the PR alone). main's other commits never touch them.
	shared, only := n-1, n-2
	fork := history - 10
	for k := 2; k <= history; k++ {
		f := (k * 7919) % (n - 2)
		if k == history {
			f = shared
			version[f][2]++ // main changes line 2 of the shared file
		} else {
			version[f][k%20]++
		}
		commit("main", k, "", "", f)
	}
	// The PR, forked at commit fork: main has changed neither of its files
	// since, but for line 2 of shared.
	version[shared][2]--
	version[shared][15]++ // merged with main's change of line 2
	version[only][5]++
	commit("feature", history+1, fmt.Sprintf(":%d", fork), "M 100644 inline new/added.txt\ndata 6\nadded\n", shared, only)
	git(s.String(), "--git-dir="+dir, "fast-import", "--quiet")
	return git("", "--git-dir="+dir, "rev-parse", "main"), git("", "--git-dir="+dir, "rev-parse", "feature")
}
