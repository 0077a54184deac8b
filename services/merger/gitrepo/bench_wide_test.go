package gitrepo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/cputime"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// BenchmarkMergeWideRoot is the merge of prsaga bench's W2 workload
// (BENCH.md): main's root tree holds `root` files, each merged by an
// earlier PR, and the PR merged adds one more file at the root, forked
// from main's first commit. The root tree is read, merged, encoded, hashed,
// compressed and written per merge, so what grows with it shows here.
// Each iteration merges one of 256 PRs, each adding its own file, so that
// (up to 256 iterations) every merge writes a tree never written before.
//
//	go test ./gitrepo -run '^$' -bench BenchmarkMergeWideRoot -benchtime 200x
func BenchmarkMergeWideRoot(b *testing.B) {
	const prs = 256
	eachWideRoot(b, prs, func(root int, main string, repo *Repo) {
		b.Run(fmt.Sprintf("root=%d", root), func(b *testing.B) {
			defer cputime.PerOp(b)()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				k := i % prs
				req := request(fmt.Sprintf("pr/%d", k), "main", "", StrategyMerge, k+1)
				head, err := gitobj.ReadRef(repo.dir, req.SourceBranch)
				if err != nil {
					b.Fatal(err)
				}
				req.HeadSHA = head.String()
				mergeAnew(b, repo, main, req, i)
			}
		})
	})
}

// eachWideRoot runs bench for each size of main's root tree the wide-root
// benchmarks take, on acme/widgets built by buildWideRepo with prs PRs and
// opened.
func eachWideRoot(b *testing.B, prs int, bench func(root int, main string, repo *Repo)) {
	gittest.Need(b)
	for _, root := range []int{50, 500} {
		dir := b.TempDir()
		main := buildWideRepo(b, dir, root, prs)
		bench(root, main, openBenchRepo(b, dir, Options{}))
	}
}

// buildWideRepo writes acme/widgets under dir: main's first commit holds a
// README, its second adds root files f_0.txt … at the root (as that many
// merged PRs would have); branches pr/0 … each add one file p_<k>.txt on
// top of the first commit. It returns main's head.
func buildWideRepo(b *testing.B, dir string, root, prs int) string {
	b.Helper()
	var s strings.Builder
	gitDir := widgetsImport(b, dir, &s)
	file := func(name, content string) { fastImportFile(&s, name, content) }
	s.WriteString("\ncommit refs/heads/main\nmark :2\ncommitter C <c@example.com> 1700000001 +0000\ndata 6\nmerged\nfrom :1\n")
	for i := range root {
		file(fmt.Sprintf("f_%d.txt", i), fmt.Sprintf("file %d of the benchmark\n", i))
	}
	for k := range prs {
		fmt.Fprintf(&s, "\ncommit refs/heads/pr/%d\ncommitter C <c@example.com> %d +0000\ndata 3\npr\nfrom :1\n", k, 1700000002+k)
		file(fmt.Sprintf("p_%d.txt", k), fmt.Sprintf("PR %d\n", k))
	}
	s.WriteString("\n")
	// Loose objects, as the workload's repositories hold them.
	benchGit(b, dir, s.String(), "--git-dir="+gitDir, "-c", "fastimport.unpackLimit=1000000", "fast-import", "--quiet")
	return benchGit(b, dir, "", "--git-dir="+gitDir, "rev-parse", "main")
}
