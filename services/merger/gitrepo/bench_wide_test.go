package gitrepo

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
	gittest.Need(b)
	const prs = 256
	for _, root := range []int{50, 500} {
		dir := b.TempDir()
		main := buildWideRepo(b, dir, root, prs)
		repo := openBenchRepo(b, dir, Options{})
		b.Run(fmt.Sprintf("root=%d", root), func(b *testing.B) {
			defer reportCPU(b)()
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
	}
}

// buildWideRepo writes acme/widgets under dir: main's first commit holds a
// README, its second adds root files f_0.txt … at the root (as that many
// merged PRs would have); branches pr/0 … each add one file p_<k>.txt on
// top of the first commit. It returns main's head.
func buildWideRepo(b *testing.B, dir string, root, prs int) string {
	b.Helper()
	gitDir := filepath.Join(dir, "acme", "widgets.git")
	git := func(stdin string, args ...string) string {
		b.Helper()
		return benchGit(b, dir, stdin, args...)
	}
	git("", "init", "-q", "--bare", "-b", "main", gitDir)
	var s strings.Builder
	file := func(name, content string) { fastImportFile(&s, name, content) }
	s.WriteString("commit refs/heads/main\nmark :1\ncommitter C <c@example.com> 1700000000 +0000\ndata 7\ninitial\n")
	file("README.md", "# widgets\n")
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
	git(s.String(), "--git-dir="+gitDir, "-c", "fastimport.unpackLimit=1000000", "fast-import", "--quiet")
	return git("", "--git-dir="+gitDir, "rev-parse", "main")
}
