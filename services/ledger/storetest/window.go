package storetest

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/ledger"
)

// stored is one transition as the test wrote it.
type stored struct {
	pr       string
	seq      int64
	to       contracts.State
	inferred bool
	at       time.Time
}

// testStepWindow compares the step durations of bounded windows of a
// random history with a brute-force computation over the whole of it.
func testStepWindow(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	s := open(t, pstoretest.NewClock(t0).Now).Store
	rnd := rand.New(rand.NewPCG(7, 9))
	states := append(slices.Clone(contracts.Steps), contracts.StateMerged, contracts.StateMergeFailed)

	// 40 PRs, 1-8 transitions each, interleaved in time. Several
	// transitions share a time, as those of one decision do, and some PRs
	// share times with others.
	var all []stored
	next := map[string]int64{}
	clock := map[string]time.Time{}
	for range 200 {
		pr := contracts.PRID("acme/w", 1+rnd.IntN(40))
		if next[pr] >= 8 {
			continue
		}
		at, ok := clock[pr]
		if !ok {
			at = t0.Add(time.Duration(rnd.IntN(2000)) * time.Millisecond)
		}
		if rnd.IntN(4) > 0 { // else the same time as the previous one
			at = at.Add(time.Duration(1+rnd.IntN(500)) * time.Millisecond)
		}
		clock[pr] = at
		next[pr]++
		all = append(all, stored{pr: pr, seq: next[pr], to: states[rnd.IntN(len(states))], inferred: rnd.IntN(5) == 0, at: at})
	}
	for _, st := range all {
		err := s.Update(ctx, func(tx ledger.Tx) error {
			got, err := tx.AddTransitions(st.pr, []ledger.Transition{{CorrelationID: "run", To: st.to, Inferred: st.inferred, At: st.at}})
			if err == nil && got[0].Seq != st.seq {
				err = fmt.Errorf("%s: seq %d, want %d", st.pr, got[0].Seq, st.seq)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	last := slices.MaxFunc(all, func(a, b stored) int { return a.at.Compare(b.at) }).at
	windows := []ledger.StepWindow{
		{Since: t0.Add(-time.Hour), Limit: 10_000}, // everything
		{Since: t0.Add(-time.Hour), Limit: 0},
		{Since: t0.Add(-time.Hour), Limit: 1},
		{Since: t0.Add(-time.Hour), Limit: 17},
		{Since: t0.Add(-time.Hour), Limit: 90},
		{Since: last.Add(-1500 * time.Millisecond), Limit: 10_000},
		{Since: last.Add(-700 * time.Millisecond), Limit: 25},
		{Since: last.Add(time.Millisecond), Limit: 10_000}, // nothing
		{Since: all[len(all)/2].at, Limit: 10_000},         // a transition at Since is in the window
	}
	for _, w := range windows {
		want, n, oldest := bruteSteps(all, w)
		settled(t, func() (problems []string) {
			st, err := s.Stats(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if st.Window.Transitions != n || !st.Window.Oldest.Equal(oldest) || !st.Window.Since.Equal(w.Since) || st.Window.Limit != w.Limit {
				problems = append(problems, fmt.Sprintf("window %+v: got %+v, want %d transitions, oldest %v", w, st.Window, n, oldest))
			}
			for _, step := range contracts.Steps {
				if st.Steps[step] != want[step] {
					problems = append(problems, fmt.Sprintf("window since %v limit %d: %s = %+v, want %+v", w.Since, w.Limit, step, st.Steps[step], want[step]))
				}
			}
			if len(st.Steps) != len(contracts.Steps) {
				problems = append(problems, fmt.Sprintf("window %+v: steps %v, want every step", w, st.Steps))
			}
			return problems
		})
	}
}

// bruteSteps is the definition of ledger.StepWindow over the whole
// history: the newest transitions (at, then pr_id, then seq, descending)
// at or after Since, at most Limit; a visit counts when the transition into
// an in-flight state (not inferred) and the PR's next one are both in it.
func bruteSteps(all []stored, w ledger.StepWindow) (map[contracts.State]ledger.StepStats, int, time.Time) {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b stored) int {
		return -cmp.Or(a.at.Compare(b.at), cmp.Compare(a.pr, b.pr), cmp.Compare(a.seq, b.seq))
	})
	in := map[string]map[int64]stored{}
	n := 0
	var oldest time.Time
	for _, st := range sorted {
		if n == w.Limit || st.at.Before(w.Since) {
			break
		}
		if in[st.pr] == nil {
			in[st.pr] = map[int64]stored{}
		}
		in[st.pr][st.seq] = st
		n++
		oldest = st.at
	}
	ds := map[contracts.State][]time.Duration{}
	for _, byseq := range in {
		for seq, st := range byseq {
			nx, ok := byseq[seq+1]
			if ok && st.to.InFlight() && !st.inferred {
				ds[st.to] = append(ds[st.to], nx.at.Sub(st.at))
			}
		}
	}
	out := map[contracts.State]ledger.StepStats{}
	for _, step := range contracts.Steps {
		d := ds[step]
		if len(d) == 0 {
			out[step] = ledger.StepStats{}
			continue
		}
		slices.Sort(d)
		at := func(p float64) int64 { return d[int(math.Ceil(p*float64(len(d))))-1].Milliseconds() }
		out[step] = ledger.StepStats{Count: len(d), P50Ms: at(0.5), P99Ms: at(0.99)}
	}
	return out, n, oldest
}
