package ydbcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

const split = `CREATE TABLE IF NOT EXISTS q (
    shard Uint32    NOT NULL,
    id    Utf8      NOT NULL,
    at    Timestamp NOT NULL,
    PRIMARY KEY (shard, id)
)
WITH (
    TTL = Interval("P1D") ON at,
    PARTITION_AT_KEYS = (8, 16, 24),
    AUTO_PARTITIONING_BY_LOAD = ENABLED,
    AUTO_PARTITIONING_MIN_PARTITIONS_COUNT = 4
)`

// Later migrations' ALTER TABLE are followed: an index added (ASYNC
// noted) or dropped, settings set; an unknown ALTER is refused.
func TestAlterTable(t *testing.T) {
	s, err := LoadSchema([]string{table,
		"-- the window\nALTER TABLE t ADD INDEX idx_at GLOBAL ASYNC ON (at) COVER (n)",
		"ALTER TABLE t DROP INDEX idx_state",
		"ALTER TABLE t SET (AUTO_PARTITIONING_MIN_PARTITIONS_COUNT = 2)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := s["t"]
	if ix, ok := tb.Indexes["idx_at"]; !ok || !ix.Async || strings.Join(ix.Cover, ",") != "n" {
		t.Errorf("idx_at = %+v, %v; want ASYNC covering n", ix, ok)
	}
	if _, ok := tb.Indexes["idx_state"]; ok {
		t.Error("idx_state still there after DROP INDEX")
	}
	if tb.Settings["AUTO_PARTITIONING_BY_LOAD"] != "ENABLED" || tb.Settings["AUTO_PARTITIONING_MIN_PARTITIONS_COUNT"] != "2" {
		t.Errorf("settings %v: want WITH's BY_LOAD and SET's MIN", tb.Settings)
	}
	for _, bad := range []string{
		"ALTER TABLE t DROP INDEX idx_nope",
		"ALTER TABLE t ADD INDEX idx_state GLOBAL ON (n)",
		"ALTER TABLE t ADD COLUMN x Utf8",
		"ALTER TABLE nope SET (AUTO_PARTITIONING_BY_LOAD = ENABLED)",
	} {
		if _, err := LoadSchema([]string{table, bad}, nil); err == nil {
			t.Errorf("%q: accepted, want it refused", bad)
		}
	}
}

// A statement reading an ASYNC index must be declared Stale, and a Stale
// one must read an ASYNC index.
func TestFreshness(t *testing.T) {
	s, err := LoadSchema([]string{table, "ALTER TABLE t ADD INDEX idx_at GLOBAL ASYNC ON (at)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(r query.Row) error { var id string; return r.Scan(&id) }
	cases := []Case{
		{Name: "qAsync", YQL: `SELECT id FROM t VIEW idx_at`, Scan: scan},
		{Name: "qSync", YQL: `SELECT id FROM t VIEW idx_state`, Scan: scan},
	}
	if errs := Freshness(s, map[string]bool{"qAsync": true}, cases); len(errs) != 0 {
		t.Errorf("the right declarations: %v", errs)
	}
	errs := Freshness(s, map[string]bool{"qSync": true}, cases)
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "qAsync reads the ASYNC index idx_at") ||
		!strings.Contains(errs[1].Error(), "qSync is declared ydb.Stale") {
		t.Errorf("the wrong declarations: %v, want both refused", errs)
	}
}

// Every table splits by load; a table split in advance keeps its splits.
func TestPartitioning(t *testing.T) {
	ok, err := LoadSchema([]string{table, split}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := ok.Partitioning(); len(errs) != 0 {
		t.Errorf("sane settings refused: %v", errs)
	}
	bad, err := LoadSchema([]string{table, split,
		"CREATE TABLE IF NOT EXISTS plain (k Utf8 NOT NULL, PRIMARY KEY (k))",
		"ALTER TABLE q SET (AUTO_PARTITIONING_MIN_PARTITIONS_COUNT = 1, AUTO_PARTITIONING_MAX_PARTITIONS_COUNT = 0)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, e := range bad.Partitioning() {
		got += e.Error() + "\n"
	}
	for _, want := range []string{"table plain: AUTO_PARTITIONING_BY_LOAD", "table q: split at 3 keys", "table q: AUTO_PARTITIONING_MAX_PARTITIONS_COUNT 0 below MIN 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q: want one saying %q", got, want)
		}
	}
}

// declared notes which statements are of type Stale, however imported.
func TestDeclaredStale(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport pydb \"x/ydb\"\n\nconst (\n\tqFresh = `SELECT 1`\n\tqOld pydb.Stale = `SELECT 2`\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	names, stale, err := declared(dir)
	if err != nil || strings.Join(names, ",") != "qFresh,qOld" || stale["qFresh"] || !stale["qOld"] {
		t.Fatalf("declared = %v, %v, %v; want qOld alone Stale", names, stale, err)
	}
}
