package ydbcheck

import "testing"

// Package is what the type check of an adapter's package runs on: the
// schema of its migrations and the statements its non-test files in the
// current directory declare (Declared), or the error that kept them.
type Package struct {
	Schema   Schema
	Declared []string
	Err      error
}

// LoadPackage loads the package in the current directory against stmts
// and err as ydb.SchemaStatements returns them.
func LoadPackage(stmts []string, err error) Package {
	schema, err := LoadSchema(stmts, err)
	if err != nil {
		return Package{Err: err}
	}
	declared, err := Declared(".")
	if err != nil {
		return Package{Err: err}
	}
	return Package{Schema: schema, Declared: declared}
}

// Run is Run on the package's schema and statements; a package that did
// not load fails the test at once.
func (p Package) Run(t *testing.T, cases []Case) {
	t.Helper()
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	Run(t, p.Schema, p.Declared, cases)
}
