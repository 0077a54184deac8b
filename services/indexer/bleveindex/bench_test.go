package bleveindex

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/prsaga/prsaga/platform/cputime"
)

// benchDoc is document i the way the saga's bench makes them: its own
// file, one commit message, 20 repositories.
func benchDoc(i int) Doc {
	repo := fmt.Sprintf("bench/repo%02d", i%20)
	return Doc{
		PRID: fmt.Sprintf("%s#%d", repo, i+1), Repo: repo, PRNumber: i + 1,
		TargetBranch: "main", SourceBranch: fmt.Sprintf("pr/%d", i),
		Title: fmt.Sprintf("Add f_%d.txt", i), RequestedBy: "bench",
		MergeSHA:     fmt.Sprintf("%040x", i+1),
		ChangedPaths: []string{fmt.Sprintf("f_%d.txt", i)},
		Messages:     []string{fmt.Sprintf("Merge pull request #%d\n\nPrsaga-PR: %s#%d", i+1, repo, i+1), fmt.Sprintf("add f_%d.txt", i)},
		MergedAt:     time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second),
	}
}

// benchUpsert indexes b.N new documents into a new index, batch at a time,
// and reports the CPU per document (cpu-µs/doc), background merges
// included, and the segments the index is left with.
func benchUpsert(b *testing.B, batch int) {
	x, err := Open(filepath.Join(b.TempDir(), "index"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	docs := make([]Doc, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	cpu, cpuOK := cputime.Self()
	for i := range b.N {
		docs = append(docs, benchDoc(i))
		if len(docs) == batch || i == b.N-1 {
			if err := x.Upsert(ctx, docs...); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	b.StopTimer()
	if now, ok := cputime.Self(); ok && cpuOK {
		b.ReportMetric(float64((now-cpu).Microseconds())/float64(b.N), "cpu-µs/doc")
	}
	if n, err := x.Count(); err != nil || n != uint64(b.N) {
		b.Fatalf("index holds %d documents, %v; want %d", n, err, b.N)
	}
	if segs, ok := segments(x); ok {
		b.ReportMetric(float64(segs), "segments")
	}
}

// segments is the number of segments of the index's current snapshot, from
// scorch's statistics.
func segments(x *Index) (n uint64, ok bool) {
	_ = x.use(func(idx bleve.Index) error {
		st, _ := idx.StatsMap()["index"].(map[string]any)
		mem, ok1 := st["num_root_memorysegments"].(uint64)
		file, ok2 := st["num_root_filesegments"].(uint64)
		n, ok = mem+file, ok1 && ok2
		return nil
	})
	return n, ok
}

// BenchmarkIndexBatch64 is the indexer's write under load: documents
// upserted 64 at a time, one write per delivered batch.
func BenchmarkIndexBatch64(b *testing.B) { benchUpsert(b, 64) }

// BenchmarkIndexBatch8 is a lightly loaded indexer's write.
func BenchmarkIndexBatch8(b *testing.B) { benchUpsert(b, 8) }

// BenchmarkIndexOne is one write per document: what the indexer did
// before it handled notified events in batches.
func BenchmarkIndexOne(b *testing.B) { benchUpsert(b, 1) }

func BenchmarkIndexBatch5(b *testing.B) { benchUpsert(b, 5) }
