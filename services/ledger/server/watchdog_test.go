package server_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/step"
)

// A step that never answers is failed within its timeout plus one tick,
// with a timed_out event on the bus; its late success then heals the saga.
func TestWatchdogFailsAStepThatNeverAnswers(t *testing.T) {
	b := startBus(t)
	c := startLedger(t, b, filepath.Join(t.TempDir(), "ledger.sqlite"), &logtest.Buffer{})
	const pr = "acme/widgets#9"
	r := request(pr)
	req, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), r, "")
	if err != nil {
		t.Fatal(err)
	}
	val := follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r})
	c.publish(req, val) // no merger runs: MERGING never answers
	c.waitFor(pr, contracts.StateMerging)
	s := c.waitFor(pr, contracts.StateMergeFailed)
	if s.FailedStep != contracts.StateMerging || !s.TimedOut {
		t.Fatalf("saga %+v, want timed out at MERGING", s)
	}
	var entered, failed time.Time
	for _, tr := range s.Transitions {
		switch tr.To {
		case contracts.StateMerging:
			entered = tr.At
		case contracts.StateMergeFailed:
			failed = tr.At
		}
	}
	// The transition into MERGING carries the time the stream stored the
	// validated event; the watchdog's deadline runs from when the ledger
	// projected it (received_at), the delivery's lag later. The tick may
	// start just before the deadline: the bound is the timeout plus the
	// lag and one interval, and a little for the tick's own work.
	lag := c.lag(pr, val.ID())
	if d := failed.Sub(entered); d < stepTimeout || d > stepTimeout+lag+tick+250*time.Millisecond {
		t.Fatalf("failed %s after entering MERGING, want between %s and %s + the lag (%s) + one tick (%s)", d, stepTimeout, stepTimeout, lag, tick)
	}
	ts := readStream(t, b, contracts.SubjectTimedOut, 5*time.Second)
	env, err := ts.next()
	for err == nil && env.Event.Subject() != pr {
		env, err = ts.next()
	}
	if err != nil {
		t.Fatalf("no timed_out event for %s: %v", pr, err)
	}
	p := env.Payload.(*contracts.TimedOut)
	if p.Step != contracts.StateMerging || p.LastEventID != val.ID() || env.Meta.CorrelationID != req.ID() ||
		!strings.Contains(p.Diagnosis, "was published") || !strings.Contains(p.Diagnosis, "consumer merger does not exist") {
		t.Fatalf("timed_out %+v: want MERGING, last event %s, a diagnosis naming the missing merger consumer", p, val.ID())
	}

	// The merger answers after all: the saga heals.
	c.publish(follow(t, val, contracts.TypeMerged, contracts.ServiceMerger,
		contracts.Merged{Request: r, MergeSHA: "3333333333333333333333333333333333333333"}))
	s = c.waitFor(pr, contracts.StateNotifying)
	if s.TimedOut || !s.Merged {
		t.Fatalf("healed saga %+v", s)
	}
}

// Two ledger instances over one database file, both with a watchdog:
// every stuck row is moved once, with one timed_out event.
func TestWatchdogTwoLedgersOneTimeoutPerRow(t *testing.T) {
	b := startBus(t)
	path := filepath.Join(t.TempDir(), "ledger.sqlite")
	logs := &logtest.Buffer{}
	a := startLedger(t, b, path, logs)
	startLedger(t, b, path, logs)
	const n = 12
	var prs []string
	for i := range n {
		pr := contracts.PRID("acme/two", i+1)
		prs = append(prs, pr)
		req, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), request(pr), "")
		if err != nil {
			t.Fatal(err)
		}
		a.publish(req) // no validator runs
	}
	for _, pr := range prs {
		s := a.waitFor(pr, contracts.StateMergeFailed)
		moves := 0
		for _, tr := range s.Transitions {
			if tr.To == contracts.StateMergeFailed {
				moves++
			}
		}
		if moves != 1 || !s.TimedOut {
			t.Fatalf("%s: %d moves to MERGE_FAILED, want 1: %+v", pr, moves, s.Transitions)
		}
	}
	r := readStream(t, b, contracts.SubjectTimedOut, 10*time.Second)
	per := map[string]int{}
	for total := 0; total < n; total++ {
		en, err := r.next()
		if err != nil {
			t.Fatalf("after %d timed_out events: %v", total, err)
		}
		per[en.Event.Subject()]++
	}
	if en, err := r.within(500 * time.Millisecond); err == nil {
		t.Fatalf("an extra timed_out event for %s", en.Event.Subject())
	}
	if len(per) != n {
		t.Fatalf("timed_out events per PR: %v, want one for each of %d", per, n)
	}
}
