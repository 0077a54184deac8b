package server_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/step"
)

// busConfig is shared by every connection of a test: the durable consumer
// is created with it by each merger instance, so it must be the same.
var busConfig = bus.Config{AckWait: 10 * time.Second, MaxDeliver: 20}

// sharedFile has one line per PR line below it and unchanged lines between.
func sharedFile(edit map[int]bool) string {
	var b strings.Builder
	for i := 0; i <= 2*50+1; i++ {
		if edit[i] {
			fmt.Fprintf(&b, "line %d, changed by its PR\n", i)
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

// TestFiftyPRsThroughTwoMergers: 50 validated PRs at once, consumed by two
// merger instances (one database file opened by each — replicas share the
// merger's journal —, two connections, one durable consumer, one repos dir). Each PR adds its own file and changes its own line of a
// shared file, so every merge after the first merges lines onto a target
// that moved under it. Every PR is merged exactly once, by its own run,
// and has exactly one merged event, naming that merge (already_merged or
// not: see below), main has all their work, nothing is lost, the
// repository is sound, and both instances did some of the work.
func TestFiftyPRsThroughTwoMergers(t *testing.T) {
	const prs = 50
	g := newGitRepo(t)
	im := &importer{}
	im.commit("main", "", map[string]string{"README": "readme\n", "shared.txt": sharedFile(nil)})
	for n := 1; n <= prs; n++ {
		im.commit(fmt.Sprintf("pr%d", n), "main", map[string]string{
			fmt.Sprintf("pr%d/file.txt", n): fmt.Sprintf("pr %d\n", n),
			"shared.txt":                    sharedFile(map[int]bool{2 * n: true}),
		})
	}
	g.fastImport(im)

	ns, b := natstest.Start(t, busConfig)
	path := filepath.Join(t.TempDir(), "merger.sqlite")
	var handledA, handledB atomic.Int64 // events each instance handled to the end of its side effect
	counter := func(n *atomic.Int64) func(string, contracts.Envelope) error {
		return func(point string, _ contracts.Envelope) error {
			if point == runner.FaultAfterEffect {
				n.Add(1)
			}
			return nil
		}
	}
	dbA := startMergerOn(t, ns, busConfig, g.root, openShared(t, path), service.Options{Workers: 4, Fault: counter(&handledA)})
	dbB := startMergerOn(t, ns, busConfig, g.root, openShared(t, path), service.Options{Workers: 4, Fault: counter(&handledB)})

	corr := map[string]int{} // correlation id → PR
	for n := 1; n <= prs; n++ {
		strategy := contracts.StrategyMerge
		if n%2 == 0 {
			strategy = contracts.StrategySquash
		}
		id := step.NewID()
		corr[id] = n
		validated(t, b, n, fmt.Sprintf("pr%d", n), g.rev(fmt.Sprintf("pr%d", n)), strategy, id)
	}
	settled(t, b, prs)
	drained(t, dbA)
	drained(t, dbB)

	ms, failed := outcomes(t, b)
	for _, f := range failed {
		t.Errorf("step_failed for %s: %s %s", f.PRID, f.Code, f.Reason)
	}
	// Exactly once is what git and the stream hold, not how each event
	// reads: a PR's merged event says already_merged when the instance that
	// committed it found the merge done — made by an earlier attempt of the
	// same run whose own outcome was not committed (its transaction failed,
	// or lost to a redelivery to the other instance under load:
	// TestRedeliveryToTheOtherInstanceWinsTheCommit). Either way the event
	// must name the one commit this run wrote for the PR.
	events := map[int][]merged{}
	for _, m := range ms {
		n, ok := corr[m.corr]
		if !ok {
			t.Errorf("merged event of an unknown run %s", m.corr)
			continue
		}
		events[n] = append(events[n], m)
	}
	runOf := map[int]string{}
	for id, n := range corr {
		runOf[n] = id
	}
	fresh, repeated := 0, 0
	for n := 1; n <= prs; n++ {
		runs := g.mergesOf(n)
		if len(runs) != 1 {
			t.Errorf("PR %d: %d commits with its trailer on main (%v), want 1", n, len(runs), runs)
		}
		if len(events[n]) != 1 {
			t.Errorf("PR %d: %d merged events, want exactly one (the shared inbox commits one outcome per event): %+v", n, len(events[n]), events[n])
		}
		for _, m := range events[n] {
			if got, ok := runs[m.MergeSHA]; !ok || got != runOf[n] {
				t.Errorf("PR %d: merged event (already_merged %v) names %s, written by run %q; want the PR's one merge on main, written by its run %s (%v)",
					n, m.AlreadyMerged, m.MergeSHA, got, runOf[n], runs)
			}
			if m.AlreadyMerged {
				repeated++
			} else {
				fresh++
			}
		}
	}
	t.Logf("%d merged events report a fresh merge, %d a merge found done", fresh, repeated)

	files := g.run("", "ls-tree", "-r", "--name-only", "main")
	for n := 1; n <= prs; n++ {
		if !strings.Contains(files, fmt.Sprintf("pr%d/file.txt", n)) {
			t.Errorf("main lacks pr%d/file.txt", n)
		}
	}
	all := map[int]bool{}
	for n := 1; n <= prs; n++ {
		all[2*n] = true
	}
	if got := g.run("", "show", "main:shared.txt") + "\n"; got != sharedFile(all) {
		t.Errorf("main's shared.txt lost updates:\n%s", got)
	}
	g.run("", "fsck", "--strict", "--no-progress")

	var n int
	if err := dbA.Reader().QueryRow("SELECT count(*) FROM inbox WHERE consumer = ?", contracts.ConsumerMerger).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != prs {
		t.Errorf("the shared inbox holds %d events of the merger, want %d", n, prs)
	}
	a, bb := handledA.Load(), handledB.Load()
	t.Logf("instance A handled %d events, instance B %d", a, bb)
	if a == 0 || bb == 0 {
		t.Errorf("one instance did all the work (A %d, B %d): the test did not run two mergers", a, bb)
	}
}

// TestCrashAfterMergeBeforeCommit: the merger dies after moving the branch
// and before its outbox transaction commits (the runner's fault hook fails
// the first attempt right there). The event is redelivered; the merge is
// found done — for a squash only through the merge journal, the PR head
// not being in the target. The run ends with exactly one merge commit and
// exactly one merged event, already_merged=true. A crash after the commit
// and before the ack ends with one merged event too: the inbox drops the
// redelivery.
func TestCrashAfterMergeBeforeCommit(t *testing.T) {
	for _, tc := range []struct {
		point             string
		strategy          string
		wantAlreadyMerged bool
	}{
		{runner.FaultAfterEffect, contracts.StrategyMerge, true},
		{runner.FaultAfterEffect, contracts.StrategySquash, true},
		{runner.FaultAfterCommit, contracts.StrategyMerge, false},
	} {
		t.Run(tc.point+"/"+tc.strategy, func(t *testing.T) {
			g := pr7BesideMain(t)

			// A short AckWait: a crash after the commit is redelivered only then.
			cfg := busConfig
			cfg.AckWait = 2 * time.Second
			ns, b := natstest.Start(t, cfg)
			corr := step.NewID()
			var crashed atomic.Bool
			fault := func(point string, env contracts.Envelope) error {
				if point == tc.point && env.Meta.CorrelationID == corr && crashed.CompareAndSwap(false, true) {
					return errors.New("simulated crash")
				}
				return nil
			}
			db := startMerger(t, ns, cfg, g.root, service.Options{Fault: fault})
			validated(t, b, 7, "pr7", g.rev("pr7"), tc.strategy, corr)
			settled(t, b, 1)
			drained(t, db)

			if !crashed.Load() {
				t.Fatal("the fault never fired")
			}
			m := oneMerged(t, b, corr)
			if m.AlreadyMerged != tc.wantAlreadyMerged || m.MergeSHA != g.rev("main") {
				t.Errorf("merged event %+v; want already_merged %v and main's head %s", m.Merged, tc.wantAlreadyMerged, g.rev("main"))
			}
			if runs := g.mergesOf(7); len(runs) != 1 {
				t.Errorf("%d merge commits for PR 7 on main (%v), want 1", len(runs), runs)
			}
			g.run("", "fsck", "--strict", "--no-progress")
		})
	}
}
