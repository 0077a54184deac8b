package ydb

import "testing"

// The index changes a migration may hold are recognised (and only they),
// comment lines and line breaks notwithstanding.
func TestIndexChange(t *testing.T) {
	for _, c := range []struct {
		stmt         string
		table, index string
		add, ok      bool
	}{
		{"-- why\nALTER TABLE saga_transition\n    ADD INDEX idx_x GLOBAL ASYNC ON (at)", "saga_transition", "idx_x", true, true},
		{"ALTER TABLE saga_transition DROP INDEX idx_y", "saga_transition", "idx_y", false, true},
		{"ALTER TABLE t SET (AUTO_PARTITIONING_BY_LOAD = ENABLED)", "", "", false, false},
		{"CREATE TABLE IF NOT EXISTS t (k Utf8, PRIMARY KEY (k))", "", "", false, false},
	} {
		table, index, add, ok := indexChange(c.stmt)
		if table != c.table || index != c.index || add != c.add || ok != c.ok {
			t.Errorf("indexChange(%q) = %q, %q, %v, %v; want %q, %q, %v, %v", c.stmt, table, index, add, ok, c.table, c.index, c.add, c.ok)
		}
	}
}
