package ledger

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// StepStatsOf summarises durations with nearest-rank percentiles.
func StepStatsOf(ds []time.Duration) StepStats {
	if len(ds) == 0 {
		return StepStats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return StepStats{Count: len(s), P50Ms: rank(0.50).Milliseconds(), P99Ms: rank(0.99).Milliseconds()}
}

// Run is everything the ledger recorded for one saga run (one correlation
// id): what `prsaga trace` merges with the services' logs.
type Run struct {
	CorrelationID string       `json:"correlation_id"`
	PRID          string       `json:"pr_id"`
	Transitions   []Transition `json:"transitions"`
	Events        []Event      `json:"events"`
}

// EmptySteps is a Stats.Steps with every step present.
func EmptySteps() map[contracts.State]StepStats {
	out := map[contracts.State]StepStats{}
	for _, s := range contracts.Steps {
		out[s] = StepStats{}
	}
	return out
}

// StepRow is one transition as step durations need it.
type StepRow struct {
	PRID     string
	Seq      int64
	To       contracts.State
	Inferred bool
	At       time.Time
}

// StepDurations summarises the finished visits of each step among rows (a
// window of the history, in any order): a visit runs from a transition
// into an in-flight state to the PR's next transition (seq + 1), and
// counts when both are among rows. A visit entered by an inferred
// transition is left out (its start was not seen). Every step is present
// in the answer.
func StepDurations(rows []StepRow) map[contracts.State]StepStats {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b StepRow) int {
		return cmp.Or(cmp.Compare(a.PRID, b.PRID), cmp.Compare(a.Seq, b.Seq))
	})
	ds := map[contracts.State][]time.Duration{}
	for i := 0; i+1 < len(rows); i++ {
		r, next := rows[i], rows[i+1]
		if r.To.InFlight() && !r.Inferred && next.PRID == r.PRID && next.Seq == r.Seq+1 {
			ds[r.To] = append(ds[r.To], next.At.Sub(r.At))
		}
	}
	out := EmptySteps()
	for st, d := range ds {
		out[st] = StepStatsOf(d)
	}
	return out
}
