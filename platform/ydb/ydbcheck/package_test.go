package ydbcheck

import (
	"errors"
	"testing"
)

// LoadPackage loads the schema and the statements of this package's files
// (none: ydbcheck declares no q… statement), and passes on a migrations
// error.
func TestLoadPackage(t *testing.T) {
	p := LoadPackage([]string{"CREATE TABLE IF NOT EXISTS a (k Utf8, PRIMARY KEY (k))"}, nil)
	if p.Err != nil || p.Schema["a"] == nil || len(p.Declared) != 0 {
		t.Fatalf("LoadPackage = %v, %v, %v; want table a and no statements", p.Schema, p.Declared, p.Err)
	}
	bad := errors.New("no migrations")
	if p := LoadPackage(nil, bad); !errors.Is(p.Err, bad) {
		t.Fatalf("LoadPackage with a migrations error: %v, want it passed on", p.Err)
	}
}
