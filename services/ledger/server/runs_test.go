package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/server"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// startConsumer runs one ledger's consumer and relay (no watchdog: a row
// parked for a moment must not be timed out here) over the database file
// at path, on b.
func startConsumer(t *testing.T, b *bus.Bus, path string) *ledger.Store {
	t.Helper()
	db := sqlitetest.OpenFile(t, path, server.Migrations)
	log := slog.New(slog.DiscardHandler)
	srv, err := server.New(server.Options{DB: db, Bus: b, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	startSpec(t, srv, b, log, 20*time.Millisecond)
	return ledgersqlite.NewStore(db)
}

// TestTwoLedgerConsumersAcrossRuns runs two ledgers — two consumers of the
// one durable "ledger" consumer on a real embedded NATS, over one SQLite
// file — and publishes, for many PRs, three runs each (two that fail before
// the merge, then one that merges or fails), every event of a PR in a random
// order — a run's outcome before its request, a later run's events before
// an earlier run's request — but the requests in run order: runs are
// ordered by when the stream stored their requests. The two ledgers take
// the messages as they come, in parallel. Once the
// consumer is drained, every row must be its last run's outcome.
func TestTwoLedgerConsumersAcrossRuns(t *testing.T) {
	_, b := natstest.Start(t, bus.Config{AckWait: 5 * time.Second})
	path := filepath.Join(t.TempDir(), "ledger.sqlite")
	st := startConsumer(t, b, path)
	startConsumer(t, b, path)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	const prs = 8
	type want struct {
		run   string
		state contracts.State
		step  contracts.State
	}
	wants := map[string]want{}
	var all []*event.Event
	for n := range prs {
		pr := contracts.PRID("acme/replicas", n+1)
		r := request(pr)
		var evs []*event.Event
		var last want
		for i := range 3 {
			req, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), r, "")
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, req)
			switch {
			case i < 2 && rng.IntN(2) == 0:
				evs = append(evs, follow(t, req, contracts.TypeStepFailed, contracts.ServiceValidator,
					contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "red"}))
			case i < 2:
				v := follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r})
				evs = append(evs, v, follow(t, v, contracts.TypeStepFailed, contracts.ServiceMerger,
					contracts.StepFailed{Request: r, Step: contracts.StateMerging, Code: contracts.CodeConflict, Reason: "conflict in a.txt", Conflicts: []string{"a.txt"}}))
			case rng.IntN(2) == 0:
				v := follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r})
				m := follow(t, v, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: "3333333333333333333333333333333333333333"})
				nt := follow(t, m, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: "3333333333333333333333333333333333333333"})
				evs = append(evs, v, m, nt, follow(t, nt, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: "3333333333333333333333333333333333333333"}))
				last = want{run: req.ID(), state: contracts.StateMerged}
				continue
			default:
				evs = append(evs, follow(t, req, contracts.TypeStepFailed, contracts.ServiceValidator,
					contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeHeadMoved, Reason: "moved"}))
			}
			last = want{run: req.ID(), state: contracts.StateMergeFailed, step: contracts.StateValidating} // i == 2 only counts
		}
		rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		// The runs are in the order the stream stores their requests (as
		// the validator, which takes them in that order, decides): the
		// requests keep their order among the shuffled events.
		var reqs, slots []int
		for i, e := range evs {
			if e.Type() == contracts.TypeMergeRequested {
				slots = append(slots, i)
			}
		}
		reqs = append(reqs, slots...)
		slices.SortFunc(reqs, func(a, b int) int { return evs[a].Time().Compare(evs[b].Time()) })
		ordered := slices.Clone(evs)
		for k, i := range slots {
			ordered[i] = evs[reqs[k]]
		}
		evs = ordered
		all = append(all, evs...)
		wants[pr] = last
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, e := range all {
		if err := b.Publish(ctx, e); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	// Drained: every message delivered and acknowledged.
	for {
		c, err := b.JS.Consumer(ctx, contracts.Stream, contracts.ConsumerLedger)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatalf("consumer info: %v", err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream >= uint64(len(all)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ledger consumer not drained: %+v", info)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for pr, w := range wants {
		s, err := st.Get(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		if s.CorrelationID != w.run || s.State != w.state || s.FailedStep != w.step {
			t.Errorf("%s: %s at %q of run %s, want %s at %q of run %s\n%s", pr, s.State, s.FailedStep, s.CorrelationID, w.state, w.step, w.run, history(s))
		}
	}
}

func history(s ledger.Saga) string {
	out := ""
	for _, tr := range s.Transitions {
		out += fmt.Sprintf("  %s -> %s (%s) %s\n", tr.From, tr.To, tr.CorrelationID, tr.Reason)
	}
	return out
}
