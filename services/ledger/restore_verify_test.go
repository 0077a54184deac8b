package ledger_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// A ledger restored from a backup catches up from the stream: every event
// after the backup is projected again, a day later, and the retries made
// since the backup reach it only as their replays. Its history keeps the
// times the stream stored the events, and `ledger verify` agrees with it —
// for a PR that failed before the backup and was retried after it, and
// for one requested, failed and retried after it (whose retry came before
// any event the restored ledger projected).
func TestRestoredLedgerCatchesUpWithTheEventsTimes(t *testing.T) {
	ctx := context.Background()
	live := newFixture(t)
	stored := map[string]time.Time{}
	var stream []*event.Event
	tick := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC) // before every reading of the fixture's clock
	publish := func(e *event.Event) {
		t.Helper()
		tick = tick.Add(time.Second)
		stored[e.ID()] = tick
		stream = append(stream, e)
		if _, err := projectStored(live, live.store, e, tick); err != nil {
			t.Fatalf("project %s: %v", e.Type(), err)
		}
	}
	retry := func(pr string) *event.Event {
		t.Helper()
		ans := live.retry(ledger.RetryRequest{PRID: pr, Actor: "alice"})
		if !ans.Accepted {
			t.Fatalf("retry of %s: %+v", pr, ans)
		}
		var replay event.Event
		if err := json.Unmarshal(ans.Replay.Event, &replay); err != nil {
			t.Fatal(err)
		}
		return &replay
	}
	finish := func(r *run, replay *event.Event) {
		t.Helper()
		publish(replay)
		for _, e := range []*event.Event{
			r.follow(replay, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r.req, BaseSHA: baseSHA, MergeSHA: mergeSHA, ChangedPaths: []string{"a.go"}}),
		} {
			publish(e)
			publish(r.follow(e, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r.req, MergeSHA: mergeSHA}))
		}
	}

	before := newRun(t, "acme/widgets#1")
	publish(before.ev)
	publish(before.validated())
	publish(before.failed(contracts.StateMerging, contracts.ServiceMerger, contracts.CodeConflict))
	// The backup: a ledger that has projected what the live one has so far.
	restoredDB := sqlitetest.Open(t, ledgersqlite.Migrations)
	restored := ledgersqlite.NewStore(restoredDB)
	for _, e := range stream {
		if _, err := projectStored(live, restored, e, stored[e.ID()]); err != nil {
			t.Fatalf("back up %s: %v", e.Type(), err)
		}
	}
	first := len(stream)

	finish(before, retry(before.req.PRID))
	after := newRun(t, "acme/widgets#2")
	publish(after.ev)
	publish(after.validated())
	publish(after.failed(contracts.StateMerging, contracts.ServiceMerger, contracts.CodeConflict))
	finish(after, retry(after.req.PRID))

	// The restored ledger, a day later, given every event after the backup.
	late := &clock{}
	live.proj = &ledger.Projector{Now: func() time.Time { return late.Now().Add(24 * time.Hour) }}
	for _, e := range stream[first:] {
		if _, err := projectStored(live, restored, e, stored[e.ID()]); err != nil {
			t.Fatalf("catch up %s: %v", e.Type(), err)
		}
	}

	for _, pr := range []string{before.req.PRID, after.req.PRID} {
		s, err := restored.Get(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		if w := live.saga(pr); s.State != w.State || s.Attempts != w.Attempts || s.Attempts != 2 || s.MergeSHA != w.MergeSHA {
			t.Errorf("%s after catching up: %s attempt %d, want %s attempt %d as before the restore", pr, s.State, s.Attempts, w.State, w.Attempts)
		}
		for _, tr := range s.Transitions {
			if want, ok := stored[tr.EventID]; !ok || !tr.At.Equal(want) {
				t.Errorf("%s: transition %d %s>%s at %s, want the time the stream stored event %s (%s)", pr, tr.Seq, tr.From, tr.To, tr.At, tr.EventID, want)
			}
		}
	}
	for name, db := range map[string]*psqlite.DB{"restored": restoredDB, "live": live.db} {
		rep := verifyAll(t, db)
		if rep.Agree != 2 || len(rep.Differ) != 0 {
			t.Errorf("verify of the %s ledger: %+v, want both sagas agreeing", name, rep)
		}
	}
}

// projectStored projects e into store as the runner hands over a message
// the stream stored at at.
func projectStored(f *fixture, store *ledger.Store, e *event.Event, at time.Time) (ledger.Result, error) {
	en := env(f.t, e)
	l := &ledger.Ledger{Store: store, Proj: f.proj}
	return l.Apply(step.WithStoredAt(context.Background(), at), en, logging.ForEvent(f.log, en))
}

func verifyAll(t *testing.T, db *psqlite.DB) ledger.VerifyReport {
	t.Helper()
	ctx := context.Background()
	scratch := sqlitetest.OpenFile(t, filepath.Join(t.TempDir(), "scratch.sqlite"), ledgersqlite.Migrations)
	rep, err := ledger.Verify(ctx, ledgersqlite.NewTables(db), &ledger.Rederiver{Scratch: ledgersqlite.NewStore(scratch)})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}
