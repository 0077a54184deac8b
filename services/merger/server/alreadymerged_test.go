package server_test

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/step"
)

// TestRedeliveryToTheOtherInstanceWinsTheCommit: instance A merges a PR
// (the ref moved, the journal row committed) and is slow to commit its
// outcome — past AckWait, as under a heavy load (a busy SQLite lock, a
// descheduled process). The event is redelivered to instance B, which
// finds the merge done through the shared journal and commits merged with
// already_merged=true first; A's commit then finds the event in the shared
// inbox and is dropped. The run is merged exactly once, by its own commit,
// and its one merged event names that commit, truthfully "already merged"
// (design §3: a redelivery found the merge done). This is how
// TestFiftyPRsThroughTwoMergers can see a PR only as already merged.
func TestRedeliveryToTheOtherInstanceWinsTheCommit(t *testing.T) {
	for _, strategy := range []string{contracts.StrategyMerge, contracts.StrategySquash} {
		t.Run(strategy, func(t *testing.T) {
			g := pr7BesideMain(t)

			cfg := busConfig
			cfg.AckWait = 2 * time.Second // A's hold outlasts it soon
			ns, b := natstest.Start(t, cfg)
			path := filepath.Join(t.TempDir(), "merger.sqlite")
			shared := openShared(t, path)
			corr := step.NewID()

			var aFirst, bHandled, aSawB atomic.Bool
			held := make(chan struct{})
			// A holds its first handling of the run between its side effect
			// and its commit until the shared inbox holds the event, i.e.
			// until the other instance committed its outcome.
			faultA := func(point string, env contracts.Envelope) error {
				if point != runner.FaultAfterEffect || env.Meta.CorrelationID != corr || !aFirst.CompareAndSwap(false, true) {
					return nil
				}
				close(held)
				deadline := time.Now().Add(wait)
				for time.Now().Before(deadline) {
					var n int
					err := shared.Reader().QueryRow("SELECT count(*) FROM inbox WHERE consumer = ? AND event_id = ?",
						contracts.ConsumerMerger, env.Event.ID()).Scan(&n)
					if err == nil && n == 1 {
						aSawB.Store(true)
						return nil
					}
					time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
				}
				return errors.New("the other instance never committed the event")
			}
			faultB := func(point string, env contracts.Envelope) error {
				if point == runner.FaultAfterEffect && env.Meta.CorrelationID == corr {
					bHandled.Store(true)
				}
				return nil
			}
			// One worker in A: a redelivered copy it pulls waits in its queue,
			// not kept in progress, and so goes back to the stream at AckWait
			// until B takes one.
			dbA := startMergerOn(t, ns, cfg, g.root, shared, service.Options{Workers: 1, Fault: faultA})
			validated(t, b, 7, "pr7", g.rev("pr7"), strategy, corr)
			select {
			case <-held:
			case <-time.After(wait):
				t.Fatal("instance A never handled the event")
			}
			dbB := startMergerOn(t, ns, cfg, g.root, openShared(t, path), service.Options{Workers: 1, Fault: faultB})
			settled(t, b, 1)
			natstest.WaitFor(t, wait, "instance A to finish its held handling", aSawB.Load)
			drained(t, dbA)
			drained(t, dbB)

			if !bHandled.Load() {
				t.Fatal("instance B never handled the event: the interleaving did not happen")
			}
			m := oneMerged(t, b, corr)
			runs := g.mergesOf(7)
			if len(runs) != 1 {
				t.Fatalf("PR 7 has %d commits with its trailer on main (%v), want 1", len(runs), runs)
			}
			if !m.AlreadyMerged || m.MergeSHA != g.rev("main") {
				t.Errorf("merged event %+v; want already_merged and main's head %s", m.Merged, g.rev("main"))
			}
			if runs[m.MergeSHA] != corr {
				t.Errorf("the merge %s was written by run %q, want this run %s", m.MergeSHA, runs[m.MergeSHA], corr)
			}
			var n int
			if err := shared.Reader().QueryRow("SELECT count(*) FROM inbox WHERE consumer = ?", contracts.ConsumerMerger).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("the shared inbox holds %d events of the merger, want 1", n)
			}
			g.run("", "fsck", "--strict", "--no-progress")
		})
	}
}
