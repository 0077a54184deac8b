package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	ledger "github.com/prsaga/prsaga/services/ledger/server"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Preloaded sagas: finished long ago, in repositories of their own.
const (
	preloadOwner = "preload"
	preloadRepos = 100
	preloadSpan  = 30 * 24 * time.Hour // updated_at spread over the last 30 days
	preloadChunk = 100_000
)

func preloadPR(k int) string {
	return fmt.Sprintf("%s/r%02d#%d", preloadOwner, k%preloadRepos, k+1)
}

// preload inserts n MERGED sagas, each with its five transitions, into the
// ledger's database at path (created with the ledger's migrations) before
// the ledger starts. The rows are generated inside SQLite (a recursive
// CTE), in chunks of one transaction each.
//
// This writes the ledger's tables directly: the schema is the ledger's
// (services/ledger/sqlite/migrations), columns not named take their
// defaults.
func preload(ctx context.Context, path string, n int, progress io.Writer) error {
	// The ledger's migrations make the tables; the rows go in through a
	// plain connection, one transaction per chunk.
	ldb, err := psqlite.Open(ctx, path, psqlite.Options{}, ledger.Migrations)
	if err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	if err := ldb.Close(); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	now := time.Now()
	start := now.Add(-preloadSpan).UnixMicro()
	step := max(1, preloadSpan.Microseconds()/int64(n))
	for lo := 0; lo < n; lo += preloadChunk {
		hi := min(n, lo+preloadChunk)
		if err := preloadChunkRows(ctx, db, lo, hi, start, step); err != nil {
			return fmt.Errorf("preload rows %d-%d: %w", lo, hi, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "\rpreloading the ledger: %d/%d sagas", hi, n)
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	return nil
}

// preloadChunkRows inserts sagas lo..hi-1 and their transitions in one
// transaction.
func preloadChunkRows(ctx context.Context, db *sql.DB, lo, hi int, start, step int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE k(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?)
		INSERT INTO pr_saga (pr_id, repo, correlation_id, state, attempts, merge_sha, merged, version, created_at, updated_at)
		SELECT printf('%s/r%02d#%d', ?, i % ?, i + 1), printf('%s/r%02d', ?, i % ?), printf('preload-%d', i),
			'MERGED', 1, printf('%040x', i), 1, 5, ? + i * ? - 60000000, ? + i * ?
		FROM k`,
		lo, hi, preloadOwner, preloadRepos, preloadOwner, preloadRepos, start, step, start, step); err != nil {
		return fmt.Errorf("insert sagas: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE k(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?),
		t(seq, f, s) AS (VALUES (1, '', 'VALIDATING'), (2, 'VALIDATING', 'MERGING'), (3, 'MERGING', 'NOTIFYING'),
			(4, 'NOTIFYING', 'INDEXING'), (5, 'INDEXING', 'MERGED'))
		INSERT INTO saga_transition (pr_id, seq, correlation_id, from_state, to_state, reason, event_id, at)
		SELECT printf('%s/r%02d#%d', ?, i % ?, i + 1), seq, printf('preload-%d', i), f, s, 'preloaded',
			printf('preload-%d-%d', i, seq), ? + i * ? - (5 - seq) * 10000
		FROM k, t`,
		lo, hi, preloadOwner, preloadRepos, start, step); err != nil {
		return fmt.Errorf("insert transitions: %w", err)
	}
	return tx.Commit()
}

// Plans shown for the ledger's read paths: the SQL its store runs for
// them (services/ledger/sqlite), explained on the preloaded table.
const (
	planListByState = `SELECT * FROM pr_saga WHERE state = ? ORDER BY updated_at DESC, pr_id DESC LIMIT ?`
	planStuckList   = `SELECT * FROM pr_saga WHERE ((state = ? AND updated_at < ?) OR (state = ? AND updated_at < ?)
		OR (state = ? AND updated_at < ?) OR (state = ? AND updated_at < ?)) ORDER BY updated_at DESC, pr_id DESC LIMIT ?`
	planSagaPage = `SELECT * FROM saga_transition WHERE pr_id = ? ORDER BY seq`
	planWatchdog = `SELECT * FROM pr_saga WHERE state = ? AND updated_at < ? ORDER BY updated_at LIMIT ?`
)

// measureQueries times the ledger's read paths against a large table:
// through its HTTP API (list by state, list of stuck sagas, one saga's
// page, the dashboard) and through its store (one watchdog tick: Stuck
// with the step timeouts' cutoffs), each samples times, and explains the
// SQL behind them.
func measureQueries(ctx context.Context, ledgerURL, dbPath string, preloaded, samples int, timeout time.Duration) ([]QueryStat, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) func() error {
		return func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, ledgerURL+path, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
			}
			return nil
		}
	}
	db, err := psqlite.Open(ctx, dbPath, psqlite.Options{}, ledger.Migrations)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	store := ledgersqlite.NewStore(db)
	cutoffs := func() map[contracts.State]time.Time {
		at := time.Now().Add(-timeout)
		m := map[contracts.State]time.Time{}
		for _, s := range contracts.Steps {
			m[s] = at
		}
		return m
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	cut := time.Now().Add(-timeout).UnixMicro()
	var out []QueryStat
	for _, q := range []struct {
		name, what string
		do         func() error
		plan       string
		args       []any
		samples    int
	}{
		{"list by state (API)", "GET /api/v1/sagas?state=MERGED&limit=50", get("/api/v1/sagas?state=MERGED&limit=50"),
			planListByState, []any{"MERGED", 51}, samples},
		{"list of stuck sagas (API)", "GET /api/v1/sagas?stuck=true&limit=50", get("/api/v1/sagas?stuck=true&limit=50"),
			planStuckList, []any{"VALIDATING", cut, "MERGING", cut, "NOTIFYING", cut, "INDEXING", cut, 51}, samples},
		{"one saga's page (API)", "GET /api/v1/sagas/{random preloaded pr}", func() error {
			return get("/api/v1/sagas/" + url.PathEscape(preloadPR(rnd.IntN(preloaded))))()
		}, planSagaPage, []any{preloadPR(0)}, samples},
		{"watchdog tick (store)", "ledger sqlite Store.Stuck(cutoffs of every step, limit 100)", func() error {
			_, err := store.Stuck(ctx, cutoffs(), 100)
			return err
		}, planWatchdog, []any{"MERGING", cut, 100}, samples},
		// Not among the targets, timed for the record (few samples:
		// they may read the whole table).
		{"stats (API)", "GET /api/v1/stats", get("/api/v1/stats"), "", nil, 5},
		{"dashboard (API)", "GET /", get("/"), "", nil, 5},
	} {
		st, err := timeQuery(q.name, q.samples, q.do)
		if err != nil {
			st = QueryStat{Quantiles: Quantiles{Name: q.name}, Error: err.Error()}
		}
		st.What = q.what
		if q.plan != "" {
			if st.Plan, err = plan(ctx, db.Reader(), q.plan, q.args...); err != nil {
				return out, err
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func timeQuery(name string, samples int, do func() error) (QueryStat, error) {
	if err := do(); err != nil { // warm up, and fail early
		return QueryStat{}, fmt.Errorf("%s: %w", name, err)
	}
	ds := make([]time.Duration, 0, samples)
	for range samples {
		t0 := time.Now()
		if err := do(); err != nil {
			return QueryStat{}, fmt.Errorf("%s: %w", name, err)
		}
		ds = append(ds, time.Since(t0))
	}
	return QueryStat{Quantiles: quantiles(name, ds)}, nil
}

// plan is SQLite's EXPLAIN QUERY PLAN of q, one step per "; ".
func plan(ctx context.Context, db *sql.DB, q string, args ...any) (string, error) {
	steps, err := psqlite.QueryPlan(ctx, db, q, args...)
	return strings.Join(steps, "; "), err
}
