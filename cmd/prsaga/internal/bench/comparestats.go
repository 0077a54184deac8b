package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// CompareSummary is one workload of a sitting: each build's medians over
// its runs that count, and the ratio of this build's to the other's.
type CompareSummary struct {
	Workload string       `json:"workload"`
	This     BuildSummary `json:"this"`
	Against  BuildSummary `json:"against"`
	// Ratio is This.CPUMsPerSaga / Against.CPUMsPerSaga (medians); 0
	// when either build has no run that counts.
	Ratio float64 `json:"ratio"`
	// Pairs are the ratios of the runs of one rotation, where both count:
	// how far one minute of the machine moves the comparison.
	Pairs []float64 `json:"pairs"`
	// PicksAtTarget of Picks ways to take three runs of each build give
	// a ratio of medians at or under the sitting's target (none without
	// one, or with fewer than three runs of a build).
	Picks         int `json:"picks,omitempty"`
	PicksAtTarget int `json:"picks_at_target,omitempty"`
}

// BuildSummary is one build's runs of one workload.
type BuildSummary struct {
	Runs           []float64 `json:"cpu_ms_per_saga_runs"`
	CPUMsPerSaga   float64   `json:"cpu_ms_per_saga"`
	P99Ms          float64   `json:"p99_ms"`
	SagasPerSecond float64   `json:"sagas_per_second"`
}

func summarize(runs []CompareRun, workloads []string, target float64) []CompareSummary {
	var out []CompareSummary
	for _, w := range workloads {
		s := CompareSummary{Workload: w}
		byRound := map[int][2]float64{}
		var this, against []CompareRun
		for _, r := range runs {
			if r.Workload != w || r.Error != "" {
				continue
			}
			p := byRound[r.Round]
			if r.Build == BuildThis {
				this, p[0] = append(this, r), r.CPUMsPerSaga
			} else {
				against, p[1] = append(against, r), r.CPUMsPerSaga
			}
			byRound[r.Round] = p
		}
		s.This, s.Against = buildSummary(this), buildSummary(against)
		if s.Against.CPUMsPerSaga > 0 && s.This.CPUMsPerSaga > 0 {
			s.Ratio = s.This.CPUMsPerSaga / s.Against.CPUMsPerSaga
		}
		rounds := make([]int, 0, len(byRound))
		for r := range byRound {
			rounds = append(rounds, r)
		}
		slices.Sort(rounds)
		for _, r := range rounds {
			if p := byRound[r]; p[0] > 0 && p[1] > 0 {
				s.Pairs = append(s.Pairs, p[0]/p[1])
			}
		}
		if target > 0 {
			s.Picks, s.PicksAtTarget = picks(s.This.Runs, s.Against.Runs, target)
		}
		out = append(out, s)
	}
	return out
}

func buildSummary(runs []CompareRun) BuildSummary {
	var b BuildSummary
	var p99, tp []float64
	for _, r := range runs {
		b.Runs = append(b.Runs, r.CPUMsPerSaga)
		p99 = append(p99, r.P99Ms)
		tp = append(tp, r.SagasPerSecond)
	}
	b.CPUMsPerSaga, b.P99Ms, b.SagasPerSecond = median(b.Runs), median(p99), median(tp)
	return b
}

// median of xs (0 for none); xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// picks counts the ways to take three of this's runs and three of
// against's, and those whose ratio of medians is at or under target.
func picks(this, against []float64, target float64) (all, atTarget int) {
	if len(this) < 3 || len(against) < 3 {
		return 0, 0
	}
	a, b := triples(this), triples(against)
	for _, x := range a {
		for _, y := range b {
			all++
			if x <= target*y {
				atTarget++
			}
		}
	}
	return all, atTarget
}

// triples is the median of every way to take three of xs.
func triples(xs []float64) []float64 {
	var out []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			for k := j + 1; k < len(xs); k++ {
				out = append(out, median([]float64{xs[i], xs[j], xs[k]}))
			}
		}
	}
	return out
}

// Format writes the sitting's summary, one block per workload.
func (r CompareResult) Format(w io.Writer) {
	fmt.Fprintf(w, "this:    %s\nagainst: %s\n", r.This, r.Against)
	for _, s := range r.Summaries {
		fmt.Fprintf(w, "%s CPU ms per saga, medians: this %.2f (%s), against %.2f (%s)",
			s.Workload, s.This.CPUMsPerSaga, runsText(s.This.Runs), s.Against.CPUMsPerSaga, runsText(s.Against.Runs))
		if s.Ratio > 0 {
			fmt.Fprintf(w, ": ratio %.3f", s.Ratio)
		}
		fmt.Fprintln(w)
		if len(s.Pairs) > 1 {
			fmt.Fprintf(w, "   run by run %.2f–%.2f, median %.2f\n", slices.Min(s.Pairs), slices.Max(s.Pairs), median(s.Pairs))
		}
		if s.Picks > 0 {
			fmt.Fprintf(w, "   three runs of each: ratio ≤ %.2f in %d of %d picks\n", r.Target, s.PicksAtTarget, s.Picks)
		}
		fmt.Fprintf(w, "   p99 this %.1f ms, against %.1f ms; sagas/s this %.1f, against %.1f\n",
			s.This.P99Ms, s.Against.P99Ms, s.This.SagasPerSecond, s.Against.SagasPerSecond)
	}
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(w, "%d of %d runs failed and do not count\n", n, len(r.Runs))
	}
}

// runsText lists a build's runs in their order, or says there were none.
func runsText(xs []float64) string {
	if len(xs) == 0 {
		return "no run counted"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}
