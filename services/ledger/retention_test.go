package ledger_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Retention empties the event bodies of sagas merged before the cutoff,
// in batches, and nothing else: a failed saga, one in flight and one
// merged after the cutoff keep theirs; rows, transitions and event rows
// stay, a redelivery is still a duplicate, the failed saga's retry still
// replays its trigger, and verify counts the pruned sagas as not
// verifiable — unless another source (the stream) has the bodies.
func TestBodyRetentionPrunesOnlyMergedSagas(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	bodies := map[string][]byte{} // every event, as a stream would hold it
	project := func(e *event.Event) {
		t.Helper()
		f.project(e)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		bodies[e.ID()] = b
	}
	var old []*run
	for _, pr := range []string{"acme/a#1", "acme/a#2", "acme/b#3"} {
		r := newRun(t, pr)
		for _, e := range r.happy() {
			project(e)
		}
		old = append(old, r)
	}
	failed := newRun(t, "acme/a#4")
	project(failed.ev)
	project(failed.validated())
	project(failed.merged())
	project(failed.failed(contracts.StateNotifying, contracts.ServiceNotifier, contracts.CodeWebhookFailed))
	inFlight := newRun(t, "acme/a#5")
	project(inFlight.ev)
	project(inFlight.validated())
	lastOld := f.saga("acme/b#3").UpdatedAt
	recent := newRun(t, "acme/a#6")
	for _, e := range recent.happy() {
		project(e)
	}
	// The cutoff falls between the old merged sagas and the recent one.
	cut := lastOld.Add(f.saga("acme/a#6").UpdatedAt.Sub(lastOld) / 2)
	var reported int64
	r := ledger.BodyRetention{Keep: time.Hour, Batch: 2, Now: func() time.Time { return cut.Add(time.Hour) },
		Pruned: func(n int64) { reported += n }}
	pruner := f.store.Tables.(ledger.BodyPruner)
	n, err := r.Round(ctx, pruner)
	if err != nil || n != 15 || reported != 15 {
		t.Fatalf("round: %d bodies (%d reported), %v; want the 15 of the three old merged sagas", n, reported, err)
	}
	if n, err := r.Round(ctx, pruner); err != nil || n != 0 {
		t.Fatalf("second round: %d bodies, %v; want none left", n, err)
	}
	for _, pr := range []string{"acme/a#1", "acme/a#2", "acme/b#3", "acme/a#4", "acme/a#5", "acme/a#6"} {
		evs := f.events(pr)
		wantPruned := pr == "acme/a#1" || pr == "acme/a#2" || pr == "acme/b#3"
		for _, e := range evs {
			if (e.Event == nil) != wantPruned {
				t.Errorf("%s event %s body %d bytes, pruned %v", pr, e.Type, len(e.Event), wantPruned)
			}
		}
		if s := f.saga(pr); len(s.Transitions) == 0 {
			t.Errorf("%s lost its transitions", pr)
		}
	}
	if s := f.saga("acme/a#1"); s.State != contracts.StateMerged || len(s.Transitions) != 5 {
		t.Fatalf("pruned saga: %s with %d transitions, want MERGED with 5", s.State, len(s.Transitions))
	}
	run, err := f.store.Run(ctx, old[0].ev.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(run); err != nil {
		t.Fatalf("a run with pruned bodies does not encode: %v", err)
	}
	if res := f.project(old[0].ev); !res.Duplicate {
		t.Fatalf("a redelivery after pruning: %+v, want a duplicate", res)
	}

	// The failed saga's retry replays its trigger from the kept body.
	ans, err := f.retrier(f.store).Retry(ctx, ledger.RetryRequest{PRID: "acme/a#4", Actor: "alice"})
	if err != nil || !ans.Accepted {
		t.Fatalf("retry after pruning: %+v %v", ans, err)
	}
	var replay event.Event
	if err := json.Unmarshal(ans.Replay.Event, &replay); err != nil {
		t.Fatal(err)
	}
	project(&replay)
	if s := f.saga("acme/a#4"); s.State != contracts.StateNotifying || s.Attempts != 2 {
		t.Fatalf("after the retry: %s attempt %d, want NOTIFYING attempt 2", s.State, s.Attempts)
	}

	verify := func(body func(string) ([]byte, bool)) ledger.VerifyReport {
		t.Helper()
		scratch, err := psqlite.Open(ctx, filepath.Join(t.TempDir(), "scratch.sqlite"), psqlite.Options{}, ledgersqlite.Migrations)
		if err != nil {
			t.Fatal(err)
		}
		defer scratch.Close()
		rep, err := ledger.Verify(ctx, ledgersqlite.NewTables(f.db), &ledger.Rederiver{Scratch: ledgersqlite.NewStore(scratch), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := verify(nil); rep.Sagas != 6 || rep.Unverifiable != 3 || rep.Agree != 3 || len(rep.Differ) != 0 {
		t.Fatalf("verify after pruning: %+v, want 3 unverifiable and 3 agreeing", rep)
	}
	fromStream := func(id string) ([]byte, bool) { b, ok := bodies[id]; return b, ok }
	if rep := verify(fromStream); rep.Unverifiable != 0 || rep.Agree != 6 {
		t.Fatalf("verify with the stream's bodies: %+v, want all 6 agreeing", rep)
	}
}
