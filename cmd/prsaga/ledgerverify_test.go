package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/services/ledger"
)

// prsaga ledger verify over 2,000 sagas (fewer under -race) the ledger's own code wrote
// (retries, a watchdog tick, a run taking over, duplicates, events out of
// order): nothing to report, exit 0. Rows and transitions corrupted with
// SQL on the file: verify names exactly those sagas and differences, exit
// 1. A repair is refused while a ledger runs; with it stopped, it rewrites
// them, audited, keeps saga_state_count right, and verify is clean again.
func TestLedgerVerifyAndRepair(t *testing.T) {
	const n = verifySagas
	cfg := testConfig(t)
	start := time.Now()
	seedLedger(t, cfg.DataDir, n)
	t.Logf("seeded %d sagas in %v", n, time.Since(start))
	verify := func(args ...string) (int, ledger.VerifyReport, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"ledger", "verify", "--data", cfg.DataDir, "--json"}, args...)...)
		var rep ledger.VerifyReport
		if code != exitUsage {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("ledger verify printed no JSON report (exit %d): %v\n%s%s", code, err, out, errOut)
			}
		}
		return code, rep, errOut
	}

	start = time.Now()
	code, rep, errOut := verify()
	t.Logf("verified %d sagas in %v", rep.Sagas, time.Since(start))
	if code != exitOK || rep.Sagas != n || rep.Agree != n || len(rep.Differ) != 0 || rep.Unverifiable != 0 {
		t.Fatalf("healthy ledger: exit %d, %d sagas, %d agree, %d unverifiable, differences %+v %s; want exit 0 and %d agreeing",
			code, rep.Sagas, rep.Agree, rep.Unverifiable, rep.Differ, errOut, n)
	}

	path := filepath.Join(cfg.DataDir, "db", "ledger.sqlite")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		res, err := db.Exec(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if k, _ := res.RowsAffected(); k != 1 {
			t.Fatalf("%s %v: %d rows, want 1", q, args, k)
		}
	}
	// The corruption, and what verify must say of each saga.
	want := map[string][]string{
		seedPR(6):      {"column state"},        // a merged saga shown as MERGING
		seedPR(7):      {"missing row"},         // its row deleted
		seedPR(8):      {"missing transition"},  // one transition deleted
		seedPR(9):      {"transition to_state"}, // one transition altered
		seedPR(10):     {"column attempts"},     // a retried saga's attempts
		seedPR(11):     {"column state", "column failed_step", "column timed_out"},
		"acme/ghost#1": {"extra row"}, // a row no event makes
	}
	exec(`UPDATE pr_saga SET state = 'MERGING' WHERE pr_id = ?`, seedPR(6))
	exec(`DELETE FROM pr_saga WHERE pr_id = ?`, seedPR(7))
	exec(`DELETE FROM saga_transition WHERE pr_id = ? AND seq = 2`, seedPR(8))
	exec(`UPDATE saga_transition SET to_state = 'INDEXING' WHERE pr_id = ? AND seq = 3`, seedPR(9))
	exec(`UPDATE pr_saga SET attempts = 5 WHERE pr_id = ?`, seedPR(10))
	exec(`UPDATE pr_saga SET state = 'MERGING', failed_step = '', timed_out = 0 WHERE pr_id = ?`, seedPR(11)) // a timeout undone
	// Recent, so that the ledger started below does not time it out.
	exec(`INSERT INTO pr_saga (pr_id, repo, correlation_id, state, attempts, version, created_at, updated_at)
		VALUES ('acme/ghost#1', 'acme/ghost', 'c-ghost', 'VALIDATING', 1, 1, ?, ?)`, time.Now().UnixMicro(), time.Now().UnixMicro())

	code, rep, errOut = verify()
	if code != exitFailed {
		t.Fatalf("corrupted ledger: exit %d %s, want 1", code, errOut)
	}
	got := map[string][]string{}
	for _, c := range rep.Differ {
		for _, d := range c.Diffs {
			got[c.PRID] = append(got[c.PRID], strings.TrimSpace(d.What+" "+d.Column))
		}
	}
	for pr := range want {
		slices.Sort(want[pr])
		slices.Sort(got[pr])
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("verify named %v, want exactly %v", got, want)
	}
	if rep.Agree != n-6 {
		t.Fatalf("%d sagas agree, want %d", rep.Agree, n-6)
	}

	// A ledger running on the database: the repair is refused, nothing written.
	st := startWith(t, stack.Options{Config: cfg, Services: []string{"ledger"}, NoHTTP: true})
	code, _, errOut = runCLI(t, "ledger", "verify", "--data", cfg.DataDir, "--repair")
	if code != exitUsage || !strings.Contains(errOut, "refusing to repair") {
		t.Fatalf("repair beside a running ledger: exit %d %s, want 2 refusing", code, errOut)
	}
	var state string
	if err := db.QueryRow(`SELECT state FROM pr_saga WHERE pr_id = ?`, seedPR(6)).Scan(&state); err != nil || state != "MERGING" {
		t.Fatalf("after the refused repair %s is %q (%v), want it untouched", seedPR(6), state, err)
	}
	st.Stop()

	// The repair, in the human format: it names each saga it rewrites.
	code, human, errOut := runCLI(t, "ledger", "verify", "--data", cfg.DataDir, "--repair", "--actor", "ops@test")
	if code != exitOK || !strings.Contains(human, "repaired 7 sagas") {
		t.Fatalf("repair: exit %d %s %s, want 0 and 7 sagas repaired", code, human, errOut)
	}
	for pr := range want {
		if !strings.Contains(human, pr+":") {
			t.Errorf("the repair's report does not name %s:\n%s", pr, human)
		}
	}
	if code, rep, errOut := verify(); code != exitOK || len(rep.Differ) != 0 || rep.Sagas != n {
		t.Fatalf("after the repair: exit %d %+v %s, want clean over %d sagas", code, rep.Differ, errOut, n)
	}
	var audits int
	if err := db.QueryRow(`SELECT count(*) FROM saga_repair WHERE actor = 'ops@test' AND reason LIKE 'repair%'`).Scan(&audits); err != nil || audits != len(want) {
		t.Fatalf("%d audit rows (%v), want %d", audits, err, len(want))
	}
	checkStateCounts(t, db)
}

// checkStateCounts compares saga_state_count, kept by triggers, with a count.
func checkStateCounts(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT s.state, s.n, coalesce(c.sagas, 0) FROM
		(SELECT state, count(*) AS n FROM pr_saga GROUP BY state) s LEFT JOIN saga_state_count c ON c.state = s.state
		UNION ALL SELECT c.state, 0, c.sagas FROM saga_state_count c WHERE c.sagas != 0 AND c.state NOT IN (SELECT state FROM pr_saga)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, kept int
		if err := rows.Scan(&state, &n, &kept); err != nil {
			t.Fatal(err)
		}
		if n != kept {
			t.Errorf("saga_state_count says %d sagas %s, pr_saga holds %d", kept, state, n)
		}
	}
}
