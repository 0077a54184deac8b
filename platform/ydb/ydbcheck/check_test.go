package ydbcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"
)

const table = `CREATE TABLE IF NOT EXISTS t (
    id      Utf8      NOT NULL, -- the key
    state   Utf8      NOT NULL,
    n       Int64     NOT NULL,
    at      Timestamp NOT NULL,
    done_at Timestamp,
    PRIMARY KEY (id),
    INDEX idx_state GLOBAL SYNC ON (state, at)
)
WITH (TTL = Interval("P1D") ON done_at, AUTO_PARTITIONING_BY_LOAD = ENABLED)`

func schema(t *testing.T) Schema {
	s, err := LoadSchema([]string{table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The checker must refuse each of these defects, and accept the fixes.
func TestCheckCatchesDefects(t *testing.T) {
	s := schema(t)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	scanTime := func(r query.Row) error { var s string; var n uint64; var x time.Time; return r.Scan(&s, &n, &x) }
	scanPtr := func(r query.Row) error { var s string; var n uint64; var x *time.Time; return r.Scan(&s, &n, &x) }
	p := func(b func() ydbsdk.Params) ydbsdk.Params { return b() }
	for _, c := range []struct {
		name    string
		c       Case
		wantErr string
	}{
		{"MIN with GROUP BY into **time.Time (issue 15 item 1)", Case{YQL: `SELECT state, COUNT(*) AS n, MIN(at) AS oldest FROM t VIEW idx_state GROUP BY state`, Scan: scanPtr}, "into **time.Time"},
		{"MIN with GROUP BY into *time.Time", Case{YQL: `SELECT state, COUNT(*) AS n, MIN(at) AS oldest FROM t VIEW idx_state GROUP BY state`, Scan: scanTime, Scans: "counts every state"}, ""},
		{"COUNT into int64", Case{YQL: `SELECT COUNT(*) AS n FROM t`, Scan: func(r query.Row) error { var n int64; return r.Scan(&n) }}, "Uint64"},
		{"MIN without GROUP BY into **time.Time", Case{YQL: `SELECT MIN(at) AS oldest FROM t`, Scan: func(r query.Row) error { var x *time.Time; return r.Scan(&x) }, Scans: "the oldest of all"}, ""},
		{"a key point missing the key's first column (a full scan)", Case{YQL: `SELECT id FROM t VIEW idx_state WHERE at = $at`, Params: ydbsdk.ParamsBuilder().Param("$at").Timestamp(at).Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "does not bind state"},
		{"a full read said to be one but bound", Case{YQL: `SELECT id FROM t WHERE id = $id`, Params: ydbsdk.ParamsBuilder().Param("$id").Text("a").Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }, Scans: "not really"}, "reads key points or ranges"},
		{"nullable column into **time.Time", Case{YQL: `SELECT done_at FROM t WHERE id = $id`, Params: p(func() ydbsdk.Params { return ydbsdk.ParamsBuilder().Param("$id").Text("a").Build() }),
			Scan: func(r query.Row) error { var x *time.Time; return r.Scan(&x) }}, ""},
		{"too few destinations", Case{YQL: `SELECT id, n FROM t`, Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "1 destinations for 2 columns"},
		{"Int64 parameter for a Timestamp column", Case{YQL: `SELECT id FROM t WHERE at < $cut`, Params: ydbsdk.ParamsBuilder().Param("$cut").Int64(1).Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "wants Timestamp"},
		{"zero time.Time as a Timestamp", Case{YQL: `SELECT id FROM t WHERE at < $cut`, Params: ydbsdk.ParamsBuilder().Param("$cut").Timestamp(time.Time{}).Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "outside YQL's range"},
		{"parameter not bound", Case{YQL: `DELETE FROM t WHERE id = $id`}, "$id"},
		{"parameter bound but unused", Case{YQL: `DELETE FROM t WHERE id = $id`, Params: ydbsdk.ParamsBuilder().Param("$id").Text("a").Param("$x").Text("b").Build()}, "$x is bound"},
		{"LIMIT takes Uint64", Case{YQL: `SELECT id FROM t LIMIT $limit`, Params: ydbsdk.ParamsBuilder().Param("$limit").Int64(1).Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "wants Uint64"},
		{"IN takes a List of the column's type", Case{YQL: `DELETE FROM t WHERE id IN $ids`, Params: ydbsdk.ParamsBuilder().Param("$ids").Text("a").Build()}, "List<Utf8>"},
		{"UPSERT leaving out a NOT NULL column", Case{YQL: `UPSERT INTO t (id, state) VALUES ($id, $state)`,
			Params: ydbsdk.ParamsBuilder().Param("$id").Text("a").Param("$state").Text("s").Build()}, "leaves out NOT NULL or key column n"},
		{"AS_TABLE member of the wrong type", Case{YQL: `UPDATE t ON SELECT id, at FROM AS_TABLE($rows)`,
			Params: ydbsdk.ParamsBuilder().Param("$rows").Any(types.ListValue(types.StructValue(
				types.StructFieldValue("id", types.TextValue("a")), types.StructFieldValue("at", types.Int64Value(1))))).Build()}, "member at"},
		{"NULL for a nullable column through AS_TABLE", Case{YQL: `UPDATE t ON SELECT id, done_at FROM AS_TABLE($rows)`,
			Params: ydbsdk.ParamsBuilder().Param("$rows").Any(types.ListValue(types.StructValue(
				types.StructFieldValue("id", types.TextValue("a")), types.StructFieldValue("done_at", types.NullValue(types.TypeTimestamp))))).Build()}, ""},
		{"UPDATE ON: a plain Timestamp for a nullable column", Case{YQL: `UPDATE t ON SELECT id, done_at FROM AS_TABLE($rows)`,
			Params: ydbsdk.ParamsBuilder().Param("$rows").Any(types.ListValue(types.StructValue(
				types.StructFieldValue("id", types.TextValue("a")), types.StructFieldValue("done_at", types.TimestampValueFromTime(at))))).Build()}, "types must match"},
		{"unknown column", Case{YQL: `SELECT nope FROM t`, Scan: func(r query.Row) error { return nil }}, "unknown column nope"},
		{"unknown index", Case{YQL: `SELECT id FROM t VIEW idx_nope`, Scan: func(r query.Row) error { return nil }}, "no index idx_nope"},
		{"a SELECT with no scan function", Case{YQL: `SELECT id FROM t`}, "names no scan function"},
		{"an expression it cannot type", Case{YQL: `SELECT id, n + 1 AS m FROM t`, Scan: func(r query.Row) error { return nil }}, "not understood"},
		{"a parameter in a place it has no rule for", Case{YQL: `SELECT id FROM t WHERE $cut > at`, Params: ydbsdk.ParamsBuilder().Param("$cut").Timestamp(at).Build(),
			Scan: func(r query.Row) error { var id string; return r.Scan(&id) }}, "no typing rule"},
	} {
		err := Check(s, c.c)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
}

// Declared finds q… statements and refuses one written inline.
func TestDeclared(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nconst (\n\tqOne = `SELECT 1`\n\tnotOne = 2\n)\n\nvar qTwo = qOne\n\nfunc f(db interface{ Exec(string) error }) { _ = db.Exec(qOne) }\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Declared(dir)
	if err != nil || strings.Join(got, ",") != "qOne,qTwo" {
		t.Fatalf("Declared = %v, %v; want qOne, qTwo", got, err)
	}
	inline := src + "func g(db interface{ Exec(string) error }) { _ = db.Exec(`DELETE FROM t`) }\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(inline), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Declared(dir); err == nil || !strings.Contains(err.Error(), "inline") {
		t.Fatalf("an inline statement: %v, want it refused", err)
	}
	joined := src + "func g(db interface{ Exec(string) error }) { _ = db.Exec(qOne + ` LIMIT 1`) }\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(joined), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Declared(dir); err == nil || !strings.Contains(err.Error(), "inline") {
		t.Fatalf("a statement joined inline: %v, want it refused", err)
	}
}
