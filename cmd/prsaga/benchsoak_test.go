package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A tiny soak: the soak's retention applies where not given, every store
// is sampled through the run, the platform tables are pruned during it,
// and the tables' bytes are read at the end. (The machinery, not a
// timing: the plateau itself needs a long run; see docs/performance.md.)
func TestBenchSoak(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, _ := benchJSON(ctx, t, "--soak", "--workload", "W1", "--prs", "60", "--concurrency", "8", "--repos", "3",
		// Retention, pruning and sampling short enough for a run of a few
		// tenths of a second (60 sagas on a fast machine, without -race).
		"--stream-max-age", "30s", "--retention-sent", "1ms", "--prune-interval", "50ms", "--sample-every", "50ms",
		"--timeout", "4m", "--json", "--quiet")
	if r.OK != 60 || r.Soak == nil {
		t.Fatalf("ok=%d soak report %v; want 60 and a report", r.OK, r.Soak != nil)
	}
	s := r.Soak
	// Given settings kept, the others the soak's: inbox = max age + margin.
	if s.StreamMaxAge != "30s" || s.RetentionInbox != "45s" || s.RetentionSent != "1ms" || s.PruneInterval != "50ms" {
		t.Errorf("settings: max age %s, inbox %s, sent %s, interval %s; want 30s, 45s, 1ms, 50ms",
			s.StreamMaxAge, s.RetentionInbox, s.RetentionSent, s.PruneInterval)
	}
	if len(s.Samples) < 3 {
		t.Fatalf("%d samples, want several", len(s.Samples))
	}
	first, last := s.Samples[0], s.Samples[len(s.Samples)-1]
	if last.Sagas != 60 || last.AtSeconds <= first.AtSeconds {
		t.Errorf("last sample at %.1fs with %d sagas, first at %.1fs; want 60 at the end", last.AtSeconds, last.Sagas, first.AtSeconds)
	}
	services := []string{"ledger", "validator", "merger", "notifier", "indexer"}
	for _, svc := range services {
		if last.Bytes[svc+".sqlite"] <= 0 {
			t.Errorf("no size of %s.sqlite in the last sample: %v", svc, last.Bytes)
		}
	}
	for _, store := range []string{"index", "nats"} {
		if last.Bytes[store] <= 0 {
			t.Errorf("no size of %s in the last sample: %v", store, last.Bytes)
		}
	}
	// Retention ran: sent outbox rows (kept 1ms) were pruned during the run.
	var pruned int64
	for k, v := range last.Rows {
		if strings.HasSuffix(k, " pruned_outbox") {
			pruned += v
		}
	}
	if pruned == 0 {
		t.Errorf("no outbox rows pruned during the run; rows sampled: %v", last.Rows)
	}
	tables := map[string]bool{}
	for _, tb := range s.Tables {
		tables[tb.DB+"."+tb.Table] = true
	}
	for _, svc := range services {
		if !tables[svc+".inbox"] || !tables[svc+".(free pages)"] {
			t.Errorf("no inbox or free pages of %s among the tables at the end", svc)
		}
	}
	kinds := map[string]string{}
	for _, se := range s.Series {
		kinds[se.Name] = se.Kind
	}
	if kinds["ledger"] != "history" || kinds["indexer"] != "bounded" || kinds["ledger inbox_rows"] != "bounded" {
		t.Errorf("series kinds %v: want ledger history, indexer and the inbox rows bounded", kinds)
	}
}
