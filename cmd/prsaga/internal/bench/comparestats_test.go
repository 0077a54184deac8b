package bench

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(c.in)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input: %v, was %v", in, c.in)
		}
	}
}

// The method takes three runs of each build; picks counts every
// such choice, at or under the target inclusive.
func TestPicks(t *testing.T) {
	this := []float64{1, 1, 1, 1}
	against := []float64{2, 2, 2, 3} // every three of them have median 2
	if all, at := picks(this, against, 0.5); all != 16 || at != 16 {
		t.Errorf("picks at 0.5 = %d of %d, want 16 of 16 (1/2 is at the target)", at, all)
	}
	if all, at := picks(this, against, 0.49); all != 16 || at != 0 {
		t.Errorf("picks at 0.49 = %d of %d, want 0 of 16", at, all)
	}
	// Two slow runs of four: a pick holding both has median 5 (two of
	// the four ways to take three), the others 1.
	this = []float64{1, 1, 5, 5}
	if all, at := picks(this, []float64{2, 2, 2}, 0.5); all != 4 || at != 2 {
		t.Errorf("picks = %d of %d, want 2 of 4", at, all)
	}
	if all, _ := picks([]float64{1, 1}, against, 0.5); all != 0 {
		t.Errorf("picks with two runs of a build = %d, want none", all)
	}
}

func TestSummarize(t *testing.T) {
	runs := []CompareRun{
		{Round: 1, Workload: W1, Build: BuildAgainst, CPUMsPerSaga: 6, P99Ms: 300, SagasPerSecond: 250},
		{Round: 1, Workload: W1, Build: BuildThis, CPUMsPerSaga: 3, P99Ms: 150, SagasPerSecond: 500},
		{Round: 2, Workload: W1, Build: BuildAgainst, CPUMsPerSaga: 8, P99Ms: 320, SagasPerSecond: 200},
		{Round: 2, Workload: W1, Build: BuildThis, Error: "ok=9 bad=1 of 10"},
		{Round: 3, Workload: W1, Build: BuildAgainst, CPUMsPerSaga: 5, P99Ms: 280, SagasPerSecond: 280},
		{Round: 3, Workload: W1, Build: BuildThis, CPUMsPerSaga: 2, P99Ms: 140, SagasPerSecond: 600},
		{Round: 1, Workload: W2, Build: BuildAgainst, Error: "exit status 1"},
		{Round: 1, Workload: W2, Build: BuildThis, CPUMsPerSaga: 4, P99Ms: 200, SagasPerSecond: 400},
	}
	ss := summarize(runs, []string{W1, W2}, 0.5)
	if len(ss) != 2 || ss[0].Workload != W1 || ss[1].Workload != W2 {
		t.Fatalf("summaries = %+v, want W1 then W2", ss)
	}
	w1 := ss[0]
	// The failed run of this build does not count: its medians are of 3
	// and 2, against's of 6, 8 and 5.
	if w1.This.CPUMsPerSaga != 2.5 || w1.Against.CPUMsPerSaga != 6 {
		t.Errorf("W1 medians this %v against %v, want 2.5 and 6", w1.This.CPUMsPerSaga, w1.Against.CPUMsPerSaga)
	}
	if math.Abs(w1.Ratio-2.5/6) > 1e-12 {
		t.Errorf("W1 ratio %v, want %v", w1.Ratio, 2.5/6)
	}
	// Rounds 1 and 3 only: round 2 has no run of this build that counts.
	if !slices.Equal(w1.Pairs, []float64{0.5, 0.4}) {
		t.Errorf("W1 pairs %v, want [0.5 0.4]", w1.Pairs)
	}
	if w1.This.P99Ms != 145 || w1.Against.SagasPerSecond != 250 {
		t.Errorf("W1 p99 this %v, sagas/s against %v; want 145 and 250", w1.This.P99Ms, w1.Against.SagasPerSecond)
	}
	if w1.Picks != 0 {
		t.Errorf("W1 picks %d with two runs of this build, want none", w1.Picks)
	}
	w2 := ss[1]
	if w2.Ratio != 0 || len(w2.Pairs) != 0 || w2.This.CPUMsPerSaga != 4 {
		t.Errorf("W2 = %+v, want no ratio and no pairs (against has no run), this 4", w2)
	}

	var out bytes.Buffer
	CompareResult{This: "/new/prsaga", Against: "/old/prsaga", Target: 0.5, Runs: runs, Summaries: ss}.Format(&out)
	for _, want := range []string{
		"W1 CPU ms per saga, medians: this 2.50 (3.00 2.00), against 6.00 (6.00 8.00 5.00): ratio 0.417",
		"run by run 0.40–0.50, median 0.45",
		"W2 CPU ms per saga, medians: this 4.00 (4.00), against 0.00 (no run counted)\n",
		"2 of 8 runs failed and do not count",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}

	// One rotation: its ratio is the ratio; no range of one.
	one := runs[:2]
	out.Reset()
	CompareResult{Runs: one, Summaries: summarize(one, []string{W1}, 0)}.Format(&out)
	if !strings.Contains(out.String(), "ratio 0.500") || strings.Contains(out.String(), "run by run") {
		t.Errorf("summary of one rotation:\n%s\nwant the ratio 0.500 and no run-by-run range", out.String())
	}
}
