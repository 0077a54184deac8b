package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/cputime"
	"github.com/prsaga/prsaga/platform/gittest"
)

// BenchmarkMergeBasesDeep is the merge-base walk of prsaga bench's W2
// workload (BENCH.md) as main's history grows: main is a chain of
// `history` merge commits, each merging a PR forked from main's first
// commit, and the PR asked about forks from that first commit too, so
// the best common ancestor is the oldest commit of main. Sub-benchmarks:
// `fixed` asks about main's head every time; `moving` walks the target
// forward along main's last 256 merge commits, as merges move it (every
// 256th iteration it jumps back, as a force push would).
//
//	go test ./gitrepo -run '^$' -bench BenchmarkMergeBasesDeep -benchtime 2000x
func BenchmarkMergeBasesDeep(b *testing.B) {
	gittest.Need(b)
	for _, depth := range []int{50, 500, 5000} {
		dir := b.TempDir()
		mains, pr := buildDeepRepo(b, dir, depth)
		repo := openBenchRepo(b, dir, Options{})
		done := repo.store.Session()
		prc, err := repo.store.Commit(plumbing.NewHash(pr))
		if err != nil {
			b.Fatal(err)
		}
		tail := mains[max(0, len(mains)-256):]
		for _, kind := range []string{"fixed", "moving"} {
			b.Run(fmt.Sprintf("history=%d/%s", depth, kind), func(b *testing.B) {
				defer cputime.PerOp(b)()
				for i := 0; b.Loop(); i++ {
					target := mains[len(mains)-1]
					if kind == "moving" {
						target = tail[i%len(tail)]
					}
					tc, err := repo.store.Commit(plumbing.NewHash(target))
					if err != nil {
						b.Fatal(err)
					}
					bases, err := repo.history.MergeBases(context.Background(), tc, prc)
					if err != nil || len(bases) != 1 || bases[0].Hash.String() != mains[0] {
						b.Fatalf("MergeBases = %v, %v; want %s", bases, err, mains[0])
					}
				}
			})
		}
		done()
	}
}

// buildDeepRepo writes acme/widgets under dir: main's first commit, then
// `depth` merge commits, the i-th merging a branch of one commit (adding
// p_<i>.txt) forked from the first; and a branch "pr" forked from the
// first commit too. It returns main's commits, oldest first, and pr's head.
func buildDeepRepo(b *testing.B, dir string, depth int) ([]string, string) {
	b.Helper()
	marks := filepath.Join(dir, "marks")
	var s strings.Builder
	gitDir := widgetsImport(b, dir, &s)
	file := func(name, content string) { fastImportFile(&s, name, content) }
	// Marks: 1 the first commit; 2i+2 the i-th PR; 2i+3 its merge into main.
	for i := range depth {
		fmt.Fprintf(&s, "\ncommit refs/heads/pr-%d\nmark :%d\ncommitter C <c@example.com> %d +0000\ndata 3\npr\nfrom :1\n", i, 2*i+2, 1700000001+2*i)
		file(fmt.Sprintf("p_%d.txt", i), fmt.Sprintf("PR %d\n", i))
		from := 2*i + 1 // main's previous commit
		fmt.Fprintf(&s, "\ncommit refs/heads/main\nmark :%d\ncommitter C <c@example.com> %d +0000\ndata 6\nmerge\nfrom :%d\nmerge :%d\n", 2*i+3, 1700000002+2*i, from, 2*i+2)
		fmt.Fprintf(&s, "reset refs/heads/pr-%d\nfrom 0000000000000000000000000000000000000000\n", i)
	}
	s.WriteString("\ncommit refs/heads/pr\ncommitter C <c@example.com> 1800000000 +0000\ndata 3\npr\nfrom :1\n")
	file("new.txt", "new\n")
	s.WriteString("\n")
	benchGit(b, dir, s.String(), "--git-dir="+gitDir, "fast-import", "--quiet", "--export-marks="+marks)
	out, err := os.ReadFile(marks)
	if err != nil {
		b.Fatal(err)
	}
	byMark := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if m, sha, ok := strings.Cut(line, " "); ok {
			byMark[m] = sha
		}
	}
	mains := []string{byMark[":1"]}
	for i := range depth {
		mains = append(mains, byMark[fmt.Sprintf(":%d", 2*i+3)])
	}
	return mains, benchGit(b, dir, "", "--git-dir="+gitDir, "rev-parse", "pr")
}
