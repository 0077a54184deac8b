package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prsaga/prsaga/platform/telemetry"
)

// A service process's /metrics (the services' own registry and handler)
// and this process's runtime/metrics count the same things: a scrape of
// this process lies between two direct reads taken around it. Counts read
// wrongly (another metric, a lost digit of a float, objects without the
// tiny ones) fall outside.
func TestScrapeAllocsAgreesWithRuntimeMetrics(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tel.Handler())
	defer srv.Close()

	garbage := make([][]byte, 0, 1000)
	for i := range 1000 {
		garbage = append(garbage, make([]byte, 1000+i))
	}
	before := selfAllocs()
	scraped := scrapeAllocs(srv.URL)
	after := selfAllocs()
	if before == nil || scraped == nil || after == nil {
		t.Fatalf("counts missing: before %v, scraped %v, after %v", before, scraped, after)
	}
	if before.Bytes < 1000*1000 || before.Objects < 1000 {
		t.Errorf("this process allocated more than %+v", *before)
	}
	for _, c := range []struct {
		what        string
		lo, got, hi int64
	}{
		{"bytes", before.Bytes, scraped.Bytes, after.Bytes},
		{"objects", before.Objects, scraped.Objects, after.Objects},
		{"collections", before.GCCycles, scraped.GCCycles, after.GCCycles},
	} {
		if c.got < c.lo || c.got > c.hi {
			t.Errorf("scraped %s %d, not within the direct reads %d..%d", c.what, c.got, c.lo, c.hi)
		}
	}
	_ = garbage[len(garbage)-1]
}

func TestScrapeAllocsUnknown(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	partial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Two of the three counters: not enough to count.
		_, _ = w.Write([]byte("# TYPE go_memstats_alloc_bytes_total counter\ngo_memstats_alloc_bytes_total 1.5e+06\ngo_memstats_mallocs_total 1234\n"))
	}))
	defer partial.Close()
	for name, url := range map[string]string{"404": notFound.URL, "partial": partial.URL, "unreachable": "http://127.0.0.1:1"} {
		if a := scrapeAllocs(url); a != nil {
			t.Errorf("%s: %+v, want unknown", name, *a)
		}
	}
}

func TestUnlabelled(t *testing.T) {
	for _, c := range []struct {
		line string
		name string
		v    int64
		ok   bool
	}{
		{"go_memstats_alloc_bytes_total 1.234567891e+09", "go_memstats_alloc_bytes_total", 1234567891, true},
		{"go_gc_duration_seconds_count 42", "go_gc_duration_seconds_count", 42, true},
		{`go_gc_duration_seconds{quantile="0.5"} 1e-05`, "", 0, false},
		{"# HELP go_memstats_mallocs_total Total number", "", 0, false},
		{"go_memstats_mallocs_total NaN", "", 0, false},
		{"go_memstats_mallocs_total -1", "", 0, false},
		{"go_memstats_mallocs_total +Inf", "", 0, false},
		{"", "", 0, false},
	} {
		name, v, ok := unlabelled(c.line)
		if name != c.name || v != c.v || ok != c.ok {
			t.Errorf("unlabelled(%q) = %q, %d, %v; want %q, %d, %v", c.line, name, v, ok, c.name, c.v, c.ok)
		}
	}
}

func TestAllocCountSub(t *testing.T) {
	a := &AllocCount{Bytes: 100, Objects: 10, GCCycles: 2}
	b := &AllocCount{Bytes: 40, Objects: 4, GCCycles: 1}
	if d := a.sub(b); d == nil || *d != (AllocCount{60, 6, 1}) {
		t.Errorf("a - b = %v", d)
	}
	if d := b.sub(a); d != nil {
		t.Errorf("a counter that went back (a restarted process) gave %+v", *d)
	}
	if a.sub(nil) != nil || (*AllocCount)(nil).sub(a) != nil {
		t.Error("an unknown count gave a difference")
	}
	r := allocRate(&AllocCount{Bytes: 3000, Objects: 30, GCCycles: 3}, 3)
	if r == nil || *r != (AllocRate{1000, 10, 1}) {
		t.Errorf("rate %v", r)
	}
	if allocRate(a, 0) != nil {
		t.Error("a rate without ok sagas")
	}
}
