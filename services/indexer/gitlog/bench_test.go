package gitlog

import (
	"fmt"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
)

// w2History is BENCH.md's W2 repository after merges PRs: main starts at a
// root commit, PR i is one commit on the root made before any merge, and
// main merges them in order, each merge commit's parents the previous main
// and the PR.
func w2History(merges int) []gittest.Commit {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	cs := []gittest.Commit{{Name: "root", Branch: "main", Message: "initial", At: t0}}
	for i := range merges {
		cs = append(cs, gittest.Commit{Name: fmt.Sprintf("pr%d", i), Branch: fmt.Sprintf("pr/%d", i), Parents: []string{"root"},
			Message: fmt.Sprintf("add f_%d.txt", i), At: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	prev := "root"
	for i := range merges {
		m := fmt.Sprintf("m%d", i)
		cs = append(cs, gittest.Commit{Name: m, Branch: "main", Parents: []string{prev, fmt.Sprintf("pr%d", i)},
			Message: fmt.Sprintf("Merge pull request #%d", i+1), At: t0.Add(1000*time.Hour + time.Duration(i)*time.Second)})
		prev = m
	}
	return cs
}

// benchW2 reads W2's merges in order at a depth of history, as the indexer
// does once per saga with one Reader kept warm: the cost of one Merged call
// at that depth. Each round reads the next 100 merges after depth.
func benchW2(b *testing.B, depth int) {
	gittest.Need(b)
	const round = 100
	root := b.TempDir()
	repo := gittest.NewBare(b, root, "bench/r", w2History(depth+round)...)
	var r *Reader
	b.ReportAllocs()
	for i := range b.N {
		if i%round == 0 {
			b.StopTimer()
			var err error
			if r, err = New(root); err != nil {
				b.Fatal(err)
			}
			warm := repo.SHA[fmt.Sprintf("m%d", depth-1)]
			if m, err := r.Merged(b.Context(), "bench/r", warm); err != nil || len(m.Messages) != 2 {
				b.Fatalf("Merged = %q, %v; want the merge and its PR commit", m.Messages, err)
			}
			b.StartTimer()
		}
		m, err := r.Merged(b.Context(), "bench/r", repo.SHA[fmt.Sprintf("m%d", depth+i%round)])
		if err != nil || len(m.Messages) != 2 {
			b.Fatalf("Merged = %q, %v; want the merge and its PR commit", m.Messages, err)
		}
	}
}

func BenchmarkMergedW2Depth50(b *testing.B)  { benchW2(b, 50) }
func BenchmarkMergedW2Depth500(b *testing.B) { benchW2(b, 500) }
