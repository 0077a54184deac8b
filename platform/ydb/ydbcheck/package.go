package ydbcheck

import "testing"

// Package is what the type check of an adapter's package runs on: the
// schema of its migrations and the statements its non-test files in the
// current directory declare (Declared), or the error that kept them.
type Package struct {
	Schema   Schema
	Declared []string
	// Stale: the declared statements of type ydb.Stale.
	Stale map[string]bool
	Err   error
}

// LoadPackage loads the package in the current directory against stmts
// and err as ydb.SchemaStatements returns them.
func LoadPackage(stmts []string, err error) Package {
	schema, err := LoadSchema(stmts, err)
	if err != nil {
		return Package{Err: err}
	}
	declared, stale, err := declared(".")
	if err != nil {
		return Package{Err: err}
	}
	return Package{Schema: schema, Declared: declared, Stale: stale}
}

// Run is Run on the package's schema and statements, then the checks of
// what a type check cannot see: that each statement reading an ASYNC index
// is declared Stale and no other is (Freshness), and the tables'
// partitioning (Schema.Partitioning). A package that did not load fails
// the test at once.
func (p Package) Run(t *testing.T, cases []Case) {
	t.Helper()
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	Run(t, p.Schema, p.Declared, cases)
	t.Run("freshness", func(t *testing.T) {
		for _, err := range Freshness(p.Schema, p.Stale, cases) {
			t.Error(err)
		}
	})
	t.Run("partitioning", func(t *testing.T) {
		for _, err := range p.Schema.Partitioning() {
			t.Error(err)
		}
	})
}
