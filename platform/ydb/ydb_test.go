package ydb_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/ydb"
)

// The runner takes the batch path (one transaction per batch) on YDB.
var _ runner.BatchStore = (*ydb.DB)(nil)

// These tests need no server: a YDB cannot be started on the build
// machines. The suite in platform/store/storetest runs against a real one
// when PRSAGA_TEST_YDB holds its DSN.

func TestSplitStatements(t *testing.T) {
	got := ydb.SplitStatements(`-- a file comment

CREATE TABLE a (
    x Utf8 NOT NULL, -- the key; not the end
    PRIMARY KEY (x)
);
-- only a comment;
CREATE TABLE b (y Int64, PRIMARY KEY (y))
WITH (TTL = Interval("P1D") ON y AS SECONDS);
`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "-- a file comment\n\nCREATE TABLE a (") || !strings.HasSuffix(got[0], "PRIMARY KEY (x)\n)") ||
		!strings.HasPrefix(got[1], "-- only a comment;\nCREATE TABLE b") {
		t.Fatalf("statements = %q", got)
	}
}

func TestMigrationFilesSplitIntoCreateTables(t *testing.T) {
	stmts, err := ydb.PlatformMigrations.Statements()
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, s := range stmts {
		i := strings.Index(s.YQL, "CREATE TABLE IF NOT EXISTS ")
		if i < 0 {
			t.Errorf("statement of %s is not an idempotent CREATE TABLE: %q", s.File, s.YQL)
			continue
		}
		tables = append(tables, strings.Fields(s.YQL[i+len("CREATE TABLE IF NOT EXISTS "):])[0])
	}
	if !slices.Equal(tables, []string{"outbox", "inbox"}) {
		t.Errorf("tables = %v, want outbox, inbox", tables)
	}
}

func TestSchema(t *testing.T) {
	s, err := ydb.Schema("/local", "prsaga/validator")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`PRAGMA TablePathPrefix("/local/prsaga/validator");`, "CREATE TABLE IF NOT EXISTS schema_migrations",
		"CREATE TABLE IF NOT EXISTS outbox", "INDEX idx_outbox_unsent GLOBAL SYNC ON (shard, pending_since)", "AUTO_PARTITIONING_BY_LOAD = ENABLED", `TTL = Interval("P8D") ON processed_at`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range [][2]string{{"/local", "../etc"}, {"/local", "a/../b"}, {"/local", `x");DROP`}, {"local", "p"}, {"/lo cal", "p"}} {
		if _, err := ydb.Schema(bad[0], bad[1]); err == nil {
			t.Errorf("Schema(%q, %q) accepted a path that is not plain names", bad[0], bad[1])
		}
	}
}

func TestOpenRejectsPrefixBeforeDialling(t *testing.T) {
	for _, p := range []string{"", "/abs", "a/../b", "a//b", `x"); DROP TABLE y; --`, "a b"} {
		if _, err := ydb.Open(context.Background(), nil, ydb.Options{Prefix: p}); err == nil {
			t.Errorf("Open accepted prefix %q", p)
		}
	}
}

func TestDSN(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"grpc://localhost:2136/local", "grpc://localhost:2136/local"},
		{"grpcs://ydb.example:2135/ru-central1/b1g/etn", "grpcs://ydb.example:2135/ru-central1/b1g/etn"},
		{"ydb://localhost:2136/local", "grpc://localhost:2136/local"},
		{"grpc://localhost:2136/?database=/local", "grpc://localhost:2136/?database=/local"},
	} {
		if got, err := ydb.NormalizeDSN(c.in); err != nil || got != c.want {
			t.Errorf("NormalizeDSN(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if !ydb.IsDSN(c.in) {
			t.Errorf("IsDSN(%q) = false", c.in)
		}
	}
	for _, bad := range []string{"sqlite:///tmp/db", "grpc://localhost/local", "grpc://localhost:2136", "http://x:1/db"} {
		if _, err := ydb.NormalizeDSN(bad); err == nil {
			t.Errorf("NormalizeDSN(%q) accepted it", bad)
		}
	}
	if got := ydb.Redact("grpcs://alice:s3cret@ydb.example:2135/db"); strings.Contains(got, "s3cret") || !strings.Contains(got, "alice") {
		t.Errorf("Redact kept the password: %q", got)
	}
}

func TestTxOfRefusesAnotherStore(t *testing.T) {
	var other store.Tx = fakeTx{}
	if _, err := ydb.TxOf(other); !errors.Is(err, store.ErrWrongTx) {
		t.Errorf("TxOf(another store's tx) = %v, want ErrWrongTx", err)
	}
}

type fakeTx struct{ store.Tx }

// The typed parameters the adapters build convert to YDB's wire form.
func TestParametersAreWellTyped(t *testing.T) {
	row := func(id string) types.Value {
		return types.StructValue(
			types.StructFieldValue("id", types.TextValue(id)),
			types.StructFieldValue("body", types.BytesValue([]byte("{}"))),
			types.StructFieldValue("created_at", types.TimestampValueFromTime(time.Now())),
		)
	}
	p := ydbsdk.ParamsBuilder().
		Param("$rows").Any(types.ListValue(row("a"), row("b"))).
		Param("$ids").Any(types.ListValue(types.TextValue("a"))).
		Param("$no_time").BeginOptional().Timestamp(nil).EndOptional().
		Param("$limit").Uint64(10).
		Build()
	pb, err := p.ToYDB()
	if err != nil {
		t.Fatal(err)
	}
	if got := pb["$no_time"].GetType().GetOptionalType().GetItem().String(); !strings.Contains(got, "TIMESTAMP") {
		t.Errorf("$no_time type = %s, want Optional<Timestamp>", got)
	}
	if got := pb["$rows"].GetType().GetListType().GetItem().GetStructType(); len(got.GetMembers()) != 3 {
		t.Errorf("$rows item type = %v, want a struct of 3 members", got)
	}
}
