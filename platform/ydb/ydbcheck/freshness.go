package ydbcheck

import (
	"fmt"
	"strings"
)

// Freshness checks how each case may be run. An ASYNC index is written
// after the commit, outside the transaction, and YDB lets only a stale
// read-only transaction read it: a statement reading one must be declared
// of type ydb.Stale, which only DB.QueryStale accepts, so the compiler
// keeps it out of read-write and snapshot transactions. A statement
// declared Stale that reads no ASYNC index is refused too: it would give
// up read-your-writes for nothing.
func Freshness(schema Schema, stale map[string]bool, cases []Case) []error {
	var errs []error
	for _, c := range cases {
		base, _, _ := strings.Cut(c.Name, " (")
		ty, err := schema.TypeOf(c.YQL)
		if err != nil {
			continue // Run reports it
		}
		switch {
		case ty.Async && !stale[base]:
			errs = append(errs, fmt.Errorf("%s reads the ASYNC index %s: declare it of type ydb.Stale and run it with QueryStale (a read-write or snapshot transaction cannot read an async index)", c.Name, ty.View))
		case !ty.Async && stale[base]:
			errs = append(errs, fmt.Errorf("%s is declared ydb.Stale but reads no ASYNC index: run it as a fresh read (read-your-writes)", c.Name))
		}
	}
	return errs
}
