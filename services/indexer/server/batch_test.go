package server_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/indexer/server"
)

// faults crashes the indexer at the runner's fault points: every event's
// first handling after its index write (nothing committed: redelivered,
// written again), and the first commit of one event before its ack
// (redelivered, dropped by the inbox).
type faults struct {
	mu         sync.Mutex
	n          map[string]int // point + event id → calls
	crashAcked string         // the event whose first commit is not acked
}

func (f *faults) hook(point string, env contracts.Envelope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := point + " " + env.Event.ID()
	f.n[k]++
	switch {
	case point == runner.FaultAfterEffect && f.n[k] == 1:
		return errors.New("crash after the index write")
	case point == runner.FaultAfterCommit && env.Event.ID() == f.crashAcked && f.n[k] == 1:
		return errors.New("crash after the commit")
	}
	return nil
}

func (f *faults) calls(point, id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[point+" "+id]
}

// TestBatchSurvivesCrashes publishes N notified events before the indexer
// starts, so that they are delivered together and handled in batches, and
// crashes the indexer after every first index write and once after a
// commit: in the end each event has exactly one indexed answer, and the
// index one document per PR, searchable. Handling the whole batch once
// more (a redelivery after a crash the inbox did not see) changes nothing.
func TestBatchSurvivesCrashes(t *testing.T) {
	const n = 24
	repos := t.TempDir()
	var commits []gittest.Commit
	for i := range n {
		commits = append(commits, gittest.Commit{Name: fmt.Sprintf("c%d", i), Branch: fmt.Sprintf("pr/%d", i),
			Message: fmt.Sprintf("Add the quux%d module", i), At: at(i), Files: map[string]string{fmt.Sprintf("f_%d.txt", i): "x"}})
	}
	repo := gittest.NewBare(t, repos, "acme/widgets", commits...)

	db := sqlitetest.Open(t)
	h := build(t, bus.Config{AckWait: time.Second, MaxDeliver: 10}, server.Options{DB: db, ReposDir: repos})
	b, srv := h.bus, h.srv
	var events []*event.Event
	for i := range n {
		p := pr{"acme/widgets", i + 1, fmt.Sprintf("Change %d", i), "alice", contracts.StrategyFastForward, repo.SHA[fmt.Sprintf("c%d", i)], []string{fmt.Sprintf("f_%d.txt", i)}}
		events = append(events, h.notified(p, fmt.Sprintf("run%d", i), 1))
	}

	f := &faults{n: map[string]int{}, crashAcked: events[n/2].ID()}
	log := slog.New(slog.NewJSONHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	h.run(log, service.Options{Backoff: []time.Duration{20 * time.Millisecond}, RelayPoll: 50 * time.Millisecond, Fault: f.hook})

	ctx := t.Context()
	natstest.WaitFor(t, wait, "every event committed, acked and its answer published", func() bool {
		for _, e := range events {
			if f.calls(runner.FaultAfterCommit, e.ID()) == 0 {
				return false
			}
		}
		if !natstest.Idle(ctx, b, contracts.ConsumerIndexer) {
			return false
		}
		unsent, err := db.Unsent(ctx, 1)
		return err == nil && len(unsent) == 0
	})
	if got := natstest.OnSubject(t, ctx, b, contracts.SubjectIndexed); got != n {
		t.Errorf("%d indexed events for %d notified events, want one each", got, n)
	}
	for _, e := range events {
		if c := f.calls(runner.FaultAfterEffect, e.ID()); c != 2 {
			t.Errorf("event %s handled %d times, want twice (a crash, then the redelivery)", e.ID(), c)
		}
		if got := h.indexed(e); got.Documents != 1 || got.PRID != e.Subject() {
			t.Errorf("answer to %s = %+v; want 1 document of %s", e.ID(), got, e.Subject())
		}
	}

	checkDocs := func(when string) {
		t.Helper()
		if _, a := h.search(url.Values{"repo": {"acme/widgets"}, "limit": {"100"}}); a.Total != n {
			t.Errorf("%s: the index holds %d documents of acme/widgets, want %d", when, a.Total, n)
		}
		for i, e := range events {
			if ids := h.ids(fmt.Sprintf("quux%d", i), ""); !slices.Equal(ids, []string{e.Subject()}) {
				t.Errorf("%s: search quux%d = %v; want only %s", when, i, ids, e.Subject())
			}
		}
	}
	checkDocs("after the crashes")

	// The same batch handled again, as a redelivery would: the same
	// documents, upserted.
	envs := make([]contracts.Envelope, n)
	logs := make([]*slog.Logger, n)
	for i, e := range events {
		envs[i], logs[i] = contractstest.Open(t, e), log
	}
	_, errs := srv.Spec().Consumers[0].HandleBatch(ctx, envs, logs)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkDocs("after handling the batch again")
}
