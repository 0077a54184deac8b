package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// samples builds a run of n samples, one a second, sagas growing by 10 a
// second; bytes gives each store's size at second i.
func samples(n int, bytes func(i int) map[string]int64) []SoakSample {
	var out []SoakSample
	for i := 0; i < n; i++ {
		out = append(out, SoakSample{AtSeconds: float64(i), Sagas: int64(10 * i), Bytes: bytes(i),
			Rows: map[string]int64{"indexer inbox_rows": int64(min(i, 20) * 100)}})
	}
	return out
}

func TestJudgeSoak(t *testing.T) {
	const mb = 1 << 20
	// The indexer's file fills for 20 s (the retention window), then stays
	// near 30 MB; the ledger keeps 1 KB per saga; nats grows without end.
	smp := samples(90, func(i int) map[string]int64 {
		return map[string]int64{
			"indexer.sqlite": int64(min(i, 20)) * 3 * mb / 2, "indexer.sqlite-wal": int64(i%3) * mb,
			"ledger.sqlite": int64(10*i) * 1024,
			"nats":          int64(i) * mb,
		}
	})
	series, judged, plateau := judgeSoak(smp, 20*time.Second, 0)
	if !judged || plateau {
		t.Fatalf("judged %v plateau %v, want judged and not plateau (nats grows)", judged, plateau)
	}
	by := map[string]SoakSeries{}
	for _, s := range series {
		by[s.Name] = s
	}
	if s := by["indexer"]; s.Kind != "bounded" || !s.Plateau || s.Peak != 32*mb {
		t.Errorf("indexer: %+v, want bounded, plateau, peak 32 MB", s)
	}
	if s := by["nats"]; s.Kind != "bounded" || s.Plateau {
		t.Errorf("nats: %+v, want bounded and growing", s)
	}
	if s := by["ledger"]; s.Kind != "history" || s.PerSagaJudged != 1024 {
		t.Errorf("ledger: %+v, want history at 1024 bytes per saga", s)
	}
	if s := by["indexer inbox_rows"]; s.Unit != "rows" || !s.Plateau || s.Last != 2000 {
		t.Errorf("indexer inbox rows: %+v, want a plateau at 2000 rows", s)
	}
	r := SoakReport{Series: series, Judged: judged, Plateau: plateau, Samples: smp}
	var out bytes.Buffer
	r.Format(&out)
	if !strings.Contains(out.String(), "soak verdict: GROWS: nats\n") {
		t.Errorf("report does not name nats as growing:\n%s", out.String())
	}

	// Without nats every bounded series plateaus.
	for i := range smp {
		delete(smp[i].Bytes, "nats")
	}
	if _, judged, plateau := judgeSoak(smp, 20*time.Second, 0); !judged || !plateau {
		t.Errorf("without nats: judged %v plateau %v, want both", judged, plateau)
	}
	// A warm-up that leaves under a third of the run is not judged.
	if _, judged, _ := judgeSoak(smp, 70*time.Second, 0); judged {
		t.Error("judged a run whose window after the warm-up is under a third of it")
	}
}

func TestStoreOf(t *testing.T) {
	for rel, want := range map[string]string{
		"data/db/ledger.sqlite":                       "ledger.sqlite",
		"data/db/ledger.sqlite-wal":                   "ledger.sqlite-wal",
		"indexer/db/indexer.sqlite":                   "indexer.sqlite",
		"data/index/store/000000000005.zap":           "index",
		"data/nats/jetstream/$G/streams/PRSAGA/1.blk": "nats",
		"nats/jetstream/$G/streams/PRSAGA/msgs/1.blk": "nats",
		"logs/ledger.jsonl":                           "logs",
		"merger/merger.log":                           "logs",
		"data/db/ledger.sqlite-shm":                   "other",
	} {
		if got := storeOf(rel); got != want {
			t.Errorf("storeOf(%s) = %s, want %s", rel, got, want)
		}
	}
}

func TestParseMetric(t *testing.T) {
	name, labels, v, ok := parseMetric(`prsaga_store_size{service="ledger",what="inbox_rows"} 1234`)
	if !ok || name != "prsaga_store_size" || labels["service"] != "ledger" || labels["what"] != "inbox_rows" || v != 1234 {
		t.Errorf("got %s %v %d %v", name, labels, v, ok)
	}
	if _, _, _, ok := parseMetric("# TYPE prsaga_store_size gauge"); ok {
		t.Error("a comment parsed as a sample")
	}
	if _, _, _, ok := parseMetric("go_goroutines 12"); ok {
		t.Error("a sample without labels parsed; want it skipped")
	}
}

// A quiet store whose WAL first reaches its checkpoint size (16.5 MB) in
// the second half has not grown: the WAL is reused from then on.
func TestJudgeSoakWALFillingLate(t *testing.T) {
	const mb = 1 << 20
	smp := samples(90, func(i int) map[string]int64 {
		// Its WAL grows by 0.19 MB a second, to 16.5 MB at 85 s.
		return map[string]int64{"notifier.sqlite": 2 * mb, "notifier.sqlite-wal": min(int64(i)*33*mb/170, 33*mb/2)}
	})
	series, judged, plateau := judgeSoak(smp, 20*time.Second, 0)
	if !judged || !plateau {
		t.Fatalf("judged %v plateau %v (series %+v); want a plateau", judged, plateau, series)
	}
}
