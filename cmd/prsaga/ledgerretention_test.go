package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// After retention emptied the event bodies of the merged sagas, ledger
// verify counts them as not verifiable from the log and still verifies the
// others (exit 0); with --stream it finds the bodies in the stream, which
// still holds the events, and verifies every saga.
func TestLedgerVerifyAfterBodyRetention(t *testing.T) {
	const n = 30
	cfg := testConfig(t)
	seedLedger(t, cfg.DataDir, n)
	srv, b := natstest.Start(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "db", "ledger.sqlite"), sqlite.Options{}, ledgersqlite.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	// The stream holds every event the ledger recorded, as it would within
	// its max age.
	rows, err := db.Reader().QueryContext(ctx, `SELECT event FROM saga_event`)
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var e event.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatal(err)
		}
		if err := b.Publish(ctx, &e); err != nil {
			t.Fatalf("publish %s: %v", e.Type(), err)
		}
		published++
	}
	rows.Close()

	merged := 0
	for i := range n {
		if k := seedKind(i); k != "timed_out" && k != "notifying" {
			merged++
		}
	}
	var reported int64
	r := ledger.BodyRetention{Keep: time.Nanosecond, Batch: 7, Pruned: func(k int64) { reported += k }}
	pruned, err := r.Round(ctx, ledgersqlite.NewTables(db))
	if err != nil || pruned == 0 || pruned != reported || pruned >= int64(published) {
		t.Fatalf("retention round: %d bodies pruned (%d reported) of %d, %v", pruned, reported, published, err)
	}
	var kept int
	if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM saga_event e JOIN pr_saga s ON s.pr_id = e.pr_id
		WHERE s.state != ? AND e.event = ''`, contracts.StateMerged).Scan(&kept); err != nil || kept != 0 {
		t.Fatalf("%d bodies of sagas not merged were pruned (%v), want none", kept, err)
	}
	db.Close()

	verify := func(args ...string) ledger.VerifyReport {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"ledger", "verify", "--data", cfg.DataDir, "--json"}, args...)...)
		var rep ledger.VerifyReport
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("ledger verify %v: exit %d %s%s, want 0 and a report", args, code, out, errOut)
		}
		return rep
	}
	if rep := verify(); rep.Unverifiable != merged || rep.Agree != n-merged || len(rep.Differ) != 0 {
		t.Fatalf("after pruning: %d unverifiable, %d agree, %d differ; want %d and %d, none", rep.Unverifiable, rep.Agree, len(rep.Differ), merged, n-merged)
	}
	if rep := verify("--stream", "--nats-url", srv.Addr()); rep.Unverifiable != 0 || rep.Agree != n {
		t.Fatalf("with the stream: %d unverifiable, %d agree, %+v; want all %d agreeing", rep.Unverifiable, rep.Agree, rep.Differ, n)
	}

	// A body damaged on disk: a difference verify names, which a repair
	// leaves alone (the log cannot say what the row should be).
	damaged := seedPR(1) // timed out: its bodies were kept
	raw, err := sqlOpen(t, filepath.Join(cfg.DataDir, "db", "ledger.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE saga_event SET event = '{"specversion":' WHERE event_id =
		(SELECT event_id FROM saga_event WHERE pr_id = ? ORDER BY received_at LIMIT 1)`, damaged); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--repair"}} {
		code, out, errOut := runCLI(t, append([]string{"ledger", "verify", "--data", cfg.DataDir, "--json"}, args...)...)
		var rep ledger.VerifyReport
		if code != exitFailed || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Differ) != 1 ||
			rep.Differ[0].PRID != damaged || rep.Differ[0].Diffs[0].What != ledger.DiffUnreadable || rep.Repaired != 0 {
			t.Fatalf("ledger verify %v with a damaged body: exit %d %s%s, want 1 naming %s's unreadable event, nothing repaired", args, code, out, errOut, damaged)
		}
	}
	var state string
	if err := raw.QueryRow(`SELECT state FROM pr_saga WHERE pr_id = ?`, damaged).Scan(&state); err != nil || state != string(contracts.StateMergeFailed) {
		t.Fatalf("after the repair %s is %q (%v), want its row untouched", damaged, state, err)
	}
}

// sqlOpen opens a SQLite file as an operator's tool would, closed with t.
func sqlOpen(t *testing.T, path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err == nil {
		t.Cleanup(func() { db.Close() })
	}
	return db, err
}
