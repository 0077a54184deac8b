package ydbcheck

import (
	"fmt"
	"regexp"
)

// fullScan says why a statement with this WHERE (maybe "") reads the
// whole table t, or its index view: YDB reads key points or ranges only
// when the predicate binds the first column of the key it reads (by =,
// IN or a comparison); otherwise every row is read and filtered. "" when
// it does. A bound column under an OR still counts: the adapters' ORs are
// of a Bool parameter or of ranges on a later column.
func fullScan(t *Table, view, where string) string {
	key, what := t.Key, "table "+t.Name
	if view != "" {
		key, what = t.Indexes[view].Key, "index "+view+" of "+t.Name
	}
	if len(key) == 0 {
		return ""
	}
	if where == "" {
		return fmt.Sprintf("no WHERE on %s, whose key starts with %s", what, key[0])
	}
	bound := regexp.MustCompile(`(^|[^\w$])` + regexp.QuoteMeta(key[0]) + ` (=|<|<=|>|>=|IN) `)
	if !bound.MatchString(where) {
		return fmt.Sprintf("the WHERE does not bind %s, the first column of the key of %s", key[0], what)
	}
	return ""
}
