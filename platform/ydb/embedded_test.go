package ydb

import (
	"testing"
	"testing/fstest"
)

// The migrations are the directory's files, under the component's name;
// a directory that is not a valid path panics.
func TestEmbeddedMigrations(t *testing.T) {
	files := fstest.MapFS{
		"migrations/0001_a.yql": {Data: []byte("CREATE TABLE IF NOT EXISTS a (k Utf8, PRIMARY KEY (k));\n")},
		"other/0001_b.yql":      {Data: []byte("CREATE TABLE IF NOT EXISTS b (k Utf8, PRIMARY KEY (k));\n")},
	}
	m := EmbeddedMigrations("svc", files, "migrations")
	stmts, err := m.Statements()
	if err != nil || m.Component != "svc" || len(stmts) != 1 || stmts[0].File != "0001_a.yql" {
		t.Fatalf("migrations %+v: statements %+v, %v; want svc's one statement of 0001_a.yql", m, stmts, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("an invalid directory did not panic")
		}
	}()
	EmbeddedMigrations("svc", files, "../migrations")
}
