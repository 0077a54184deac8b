package bench

import (
	"context"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
)

func TestFormatLine(t *testing.T) {
	r := Result{Workload: W2, N: 1000, Concurrency: 64, Repos: 20, SagasPerSecond: 812.34, P50Ms: 18.25, P99Ms: 61.0, OK: 1000}
	want := "prsaga W2 N=1000 C=64 R=20: 812.3 sagas/s p50=18.2ms p99=61.0ms ok=1000 bad=0"
	if got := r.FormatLine(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestQuantilesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	q := quantiles("x", ds)
	if q.P50Ms != 100 || q.P99Ms != 198 || q.MaxMs != 200 || q.Count != 200 {
		t.Errorf("got p50 %v p99 %v max %v count %d; want 100, 198, 200, 200", q.P50Ms, q.P99Ms, q.MaxMs, q.Count)
	}
	if q := quantiles("one", ds[:1]); q.P50Ms != 1 || q.P99Ms != 1 {
		t.Errorf("one sample: p50 %v p99 %v, want 1, 1", q.P50Ms, q.P99Ms)
	}
	if q := quantiles("none", nil); q.Count != 0 || q.P99Ms != 0 {
		t.Errorf("no samples: %+v", q)
	}
}

func TestTrailerValues(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want []string
	}{
		{"Merge pull request #1 from pr/0\n\nAdd f\n\nPrsaga-PR: bench/r00#1\nPrsaga-Correlation-Id: x\n", []string{"bench/r00#1"}},
		{"Title quoting\n\nPrsaga-PR: bench/r00#9\n\nbody after\n", nil}, // not the last paragraph
		{"Add f_1.txt\n", nil},
		{"m\n\nPrsaga-PR: a/b#1\r\nPrsaga-PR: a/b#2  \n", []string{"a/b#1", "a/b#2"}},
	} {
		got := trailerValues(c.msg, trailerPR)
		if len(got) != len(c.want) {
			t.Errorf("%q: got %v, want %v", c.msg, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.msg, got, c.want)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Workload: W1, Mode: ModeInproc, N: 1, Concurrency: 1, Repos: 1, Timeout: time.Second, Dir: "/tmp/x"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	bad := ok
	bad.Mode, bad.N, bad.Exe = ModeProcs, 0, ""
	if err := bad.Validate(); err == nil {
		t.Error("procs without Exe and N=0 accepted")
	}
}

func TestStepTimesAndTimings(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []client.Transition{
		{To: "VALIDATING", At: at(10)},
		{To: "MERGING", At: at(30)},
		{To: "NOTIFYING", At: at(45), Inferred: true}, // not a time the ledger saw
		{To: "MERGING", At: at(40)},                   // a retry: the last one counts
		{To: "NOTIFYING", At: at(60)},
		{To: "INDEXING", At: at(70)},
		{To: "MERGED", At: at(100)},
	}
	got := stepTimes(ts)
	want := [len(stepStates)]time.Time{at(10), at(40), at(60), at(70), at(100)}
	if got != want {
		t.Fatalf("stepTimes: got %v, want %v", got, want)
	}
	d := &driver{prs: []pr{{id: "a"}, {id: "b"}}, sent: []time.Time{t0, t0}}
	out := []outcome{{at: got, fetched: true}, {at: stepTimes(ts[:2]), fetched: true}} // b never MERGED
	lat, steps, first, last := timings(d, out)
	if len(lat) != 1 || lat[0] != 100*time.Millisecond || !first.Equal(t0) || !last.Equal(at(100)) {
		t.Errorf("latencies %v, first %v, last %v", lat, first, last)
	}
	for k, w := range []time.Duration{10, 30, 20, 10, 30} {
		if len(steps[k]) != 1 || steps[k][0] != w*time.Millisecond {
			t.Errorf("step %d: %v, want [%v]", k, steps[k], w*time.Millisecond)
		}
	}
}

func TestCheckContextGrace(t *testing.T) {
	parent := context.Background()
	for _, c := range []struct {
		name     string
		left     time.Duration
		timedOut bool
		n        int
		atLeast  time.Duration
	}{
		{"ended 1s before the timeout", time.Second, false, 10, checkGrace},
		{"timed out", 0, true, 10, checkGrace},
		{"ten thousand sagas", time.Second, false, 10000, 50 * time.Second},
	} {
		ctx, cancel := context.WithTimeout(parent, c.left)
		cc, ccancel := checkContext(ctx, parent, c.timedOut, c.n)
		dl, ok := cc.Deadline()
		if !ok || time.Until(dl) < c.atLeast-time.Second {
			t.Errorf("%s: checks have %v, want at least %v", c.name, time.Until(dl), c.atLeast)
		}
		ccancel()
		cancel()
	}
	ctx, cancel := context.WithTimeout(parent, time.Hour)
	defer cancel()
	if cc, ccancel := checkContext(ctx, parent, false, 10); cc != ctx {
		t.Error("a run with time left got another context for its checks")
	} else {
		ccancel()
	}
}
