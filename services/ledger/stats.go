package ledger

import (
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
