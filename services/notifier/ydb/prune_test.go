package ydb

import (
	"fmt"
	"testing"
	"time"
)

// A page of the sweep yields the runs it holds whole: on a full page the
// last run may go on in the next page, which starts again at it; a run
// longer than a page is stepped over, never judged on part of its rows.
func TestCompleteRuns(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	row := func(id string, delivered bool, age int) pageRow {
		return pageRow{id: id, delivered: delivered, at: t0.Add(time.Duration(age) * time.Hour)}
	}
	for _, tc := range []struct {
		name  string
		rows  []pageRow
		limit int
		runs  string
		next  string
	}{
		{"last page of a shard", []pageRow{row("a", true, 1), row("a", true, 3), row("b", false, 1)}, 4,
			"[{a 2 true 3} {b 1 false 1}]", ""},
		{"full page: its last run is left to the next", []pageRow{row("a", true, 1), row("b", true, 2), row("c", true, 1)}, 3,
			"[{a 1 true 1} {b 1 true 2}]", "b"},
		{"one undelivered row makes a run unfinished", []pageRow{row("a", true, 1), row("a", false, 1), row("b", true, 1)}, 3,
			"[{a 2 false 1}]", "a"},
		{"a run longer than a page is skipped", []pageRow{row("a", true, 1), row("a", true, 1)}, 2, "[]", "a"},
		{"an empty shard", nil, 5, "[]", ""},
	} {
		runs, next := completeRuns(tc.rows, tc.limit)
		got := "["
		for i, r := range runs {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("{%s %d %v %d}", r.id, r.rows, r.finished, int(r.lastWrite.Sub(t0).Hours()))
		}
		got += "]"
		if got != tc.runs || next != tc.next {
			t.Errorf("%s: runs %s, next %q; want %s, %q", tc.name, got, next, tc.runs, tc.next)
		}
	}
}
