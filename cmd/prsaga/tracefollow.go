package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// followTrace prints a run's lines as they appear, in time order, until
// the run ends — its last transition moves to MERGED or MERGE_FAILED — or
// ctx is done (interrupted). Lines younger than settle are held back one
// poll, so that a line logged a moment earlier by a slower service still
// comes out before them.
func followTrace(ctx context.Context, src *traceSource, o traceOptions, stdout, stderr io.Writer) int {
	const settle = 300 * time.Millisecond
	seen := map[string]bool{}
	var held, all []traceEntry
	var start, last time.Time
	headerDone := false
	endedAt := time.Time{}
	first := true
	emit := func(es []traceEntry) {
		sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
		for _, e := range es {
			if start.IsZero() {
				start = e.Time
			}
			if !last.IsZero() && e.Time.Sub(last) >= o.gap {
				print1(stdout, o.json, gapEntry(last, e.Time.Sub(last)), start, &headerDone)
			}
			if e.Time.After(last) {
				last = e.Time
			}
			print1(stdout, o.json, e, start, &headerDone)
		}
	}
	t := time.NewTicker(o.poll)
	defer t.Stop()
	for {
		fresh, _ := src.poll(ctx, stderr, first)
		first = false
		for _, e := range fresh {
			if k := e.key(); !seen[k] {
				seen[k] = true
				held = append(held, e)
				all = append(all, e)
			}
		}
		st := contracts.State(runState(all))
		ended := st == contracts.StateMerged || st == contracts.StateMergeFailed
		if ended && endedAt.IsZero() {
			endedAt = time.Now()
		}
		// Once ended, wait out one settle period for the last lines of
		// the services (the ledger logs its last transition after commit).
		done := ended && time.Since(endedAt) >= settle
		cut := time.Now().Add(-settle)
		var ready, keep []traceEntry
		for _, e := range held {
			if done || ctx.Err() != nil || e.Time.Before(cut) {
				ready = append(ready, e)
			} else {
				keep = append(keep, e)
			}
		}
		held = keep
		emit(ready)
		if done || ctx.Err() != nil {
			if !o.json && len(all) > 0 {
				printSteps(stdout, timeline(all, o.gap))
			}
			if done && !o.json {
				fmt.Fprintf(stdout, "run %s ended: %s\n", src.id, runState(all))
			}
			return exitOK
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// print1 prints one entry: a JSON line, or a table row (the header first).
func print1(w io.Writer, asJSON bool, e traceEntry, start time.Time, headerDone *bool) {
	if asJSON {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	if !*headerDone {
		*headerDone = true
		fmt.Fprintln(w, formatRow("TIME\t+T\tSERVICE\tKIND\tWHAT"))
	}
	fmt.Fprintln(w, formatRow(entryRow(e, start)))
}

// followColumns are the widths of the columns before WHAT: a table
// printed a row at a time cannot measure them.
var followColumns = []int{12, 8, 9, 10}

// formatRow pads the tab-separated cells of a row to followColumns.
func formatRow(row string) string {
	cells := strings.SplitN(row, "\t", len(followColumns)+1)
	var b strings.Builder
	for i, c := range cells {
		if i < len(followColumns) {
			fmt.Fprintf(&b, "%-*s  ", followColumns[i], c)
			continue
		}
		b.WriteString(c)
	}
	return b.String()
}
