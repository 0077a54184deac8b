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
			Message: fmt.Sprintf("add f_%d.txt", i), At: t0.Add(time.Minute)})
	}
	prev := "root"
	for i := range merges {
		m := fmt.Sprintf("m%d", i)
		cs = append(cs, gittest.Commit{Name: m, Branch: "main", Parents: []string{prev, fmt.Sprintf("pr%d", i)},
			Message: fmt.Sprintf("Merge pull request #%d", i+1), At: t0.Add(time.Hour + time.Duration(i)*time.Second)})
		prev = m
	}
	return cs
}

// benchW2 reads the last merges of a W2 repository of depth merges, as the
// indexer does once per saga, with one Reader kept warm: the cost of one
// Merged call at that depth of history.
func benchW2(b *testing.B, depth int) {
	gittest.Need(b)
	root := b.TempDir()
	repo := gittest.NewBare(b, root, "bench/r", w2History(depth)...)
	r, err := New(root)
	if err != nil {
		b.Fatal(err)
	}
	last := repo.SHA[fmt.Sprintf("m%d", depth-1)]
	if m, err := r.Merged(b.Context(), "bench/r", last); err != nil || len(m.Messages) != 2 {
		b.Fatalf("Merged = %q, %v; want the merge and its PR commit", m.Messages, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		sha := repo.SHA[fmt.Sprintf("m%d", depth-1-i%10)]
		if _, err := r.Merged(b.Context(), "bench/r", sha); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMergedW2Depth50(b *testing.B)  { benchW2(b, 50) }
func BenchmarkMergedW2Depth500(b *testing.B) { benchW2(b, 500) }
