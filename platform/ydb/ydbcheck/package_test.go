package ydbcheck

import (
	"errors"
	"testing"
)

// LoadPackage loads the schema and the statements of this package's files
// (none: ydbcheck declares no q… statement), and passes on a migrations
// error.
func TestLoadPackage(t *testing.T) {
	schema, declared, err := LoadPackage([]string{"CREATE TABLE IF NOT EXISTS a (k Utf8, PRIMARY KEY (k))"}, nil)
	if err != nil || schema["a"] == nil || len(declared) != 0 {
		t.Fatalf("LoadPackage = %v, %v, %v; want table a and no statements", schema, declared, err)
	}
	bad := errors.New("no migrations")
	if _, _, err := LoadPackage(nil, bad); !errors.Is(err, bad) {
		t.Fatalf("LoadPackage with a migrations error: %v, want it passed on", err)
	}
}
