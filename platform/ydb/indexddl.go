package ydb

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ydb-platform/ydb-go-sdk/v3/table/options"
)

// indexChangeRE matches the two DDL forms with no IF [NOT] EXISTS that
// the migrations use: ALTER TABLE t ADD INDEX i … and ALTER TABLE t DROP
// INDEX i.
var indexChangeRE = regexp.MustCompile(`^ALTER TABLE (\w+) (ADD|DROP) INDEX (\w+)\b`)

// indexChange parses stmt (comment lines allowed) as one of those forms.
func indexChange(stmt string) (table, index string, add, ok bool) {
	var lines []string
	for _, l := range strings.Split(stmt, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
			lines = append(lines, t)
		}
	}
	m := indexChangeRE.FindStringSubmatch(strings.Join(strings.Fields(strings.Join(lines, " ")), " "))
	if m == nil {
		return "", "", false, false
	}
	return m[1], m[3], m[2] == "ADD", true
}

// indexChangeDone reports whether stmt is an index change that has
// already taken effect: the index there for ADD (a start that ran it and
// died before recording the file, or a replica starting at the same
// moment; a build still running on the server counts as there), gone for
// DROP. Any other statement is not done.
func (db *DB) indexChangeDone(ctx context.Context, stmt string) (bool, error) {
	table, index, add, ok := indexChange(stmt)
	if !ok {
		return false, nil
	}
	desc, err := db.conn.drv.Table().DescribeTable(ctx, db.dir+"/"+table)
	if err != nil {
		return false, fmt.Errorf("describe %s before changing index %s: %w", table, index, err)
	}
	has := slices.ContainsFunc(desc.Indexes, func(ix options.IndexDescription) bool { return ix.Name == index })
	return has == add, nil
}
