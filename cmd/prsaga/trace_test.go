package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The trace keeps exactly the lines of the run, from every file, and
// shows a line's own fields.
func TestLogEntriesKeepTheRunsLines(t *testing.T) {
	got, err := logEntries("testdata/trace", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d entries %+v, want the 3 lines of run-1", len(got), got)
	}
	var whats []string
	for _, e := range got {
		if e.Kind != "log" || e.Service == "" || e.Time.IsZero() {
			t.Errorf("entry %+v lacks kind, service or time", e)
		}
		whats = append(whats, e.What)
	}
	all := strings.Join(whats, "\n")
	for _, want := range []string{"saga_transition to_state=VALIDATING", "merged [merge.validated] merge_sha=abc", "err=boom"} {
		if !strings.Contains(all, want) {
			t.Errorf("entries lack %q:\n%s", want, all)
		}
	}
	if _, err := logEntries(t.TempDir(), "run-1"); err == nil {
		t.Error("an empty log dir gave no error")
	}
}

func at(ms int) time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
}

// The timeline sorts, gives each transition its time in state and marks
// the pauses; the steps say how long each state lasted.
func TestTimelineGapsAndSteps(t *testing.T) {
	entries := []traceEntry{
		{Time: at(1000), Service: "ledger", Kind: "transition", ToState: "MERGING", What: "VALIDATING -> MERGING"},
		{Time: at(0), Service: "ledger", Kind: "transition", ToState: "VALIDATING", What: "· -> VALIDATING"},
		{Time: at(10), Service: "validator", Kind: "log", What: "validated"},
		{Time: at(3000), Service: "ledger", Kind: "transition", ToState: "MERGE_FAILED", What: "MERGING -> MERGE_FAILED"},
		{Time: at(1100), Service: "merger", Kind: "log", What: "merge refused"},
		// A log line of a transition is not counted twice beside the ledger's own.
		{Time: at(1001), Service: "ledger", Kind: "log", ToState: "MERGING", What: "saga_transition"},
	}
	got := timeline(entries, 500*time.Millisecond)
	var kinds []string
	for i, e := range got {
		kinds = append(kinds, e.Kind+":"+e.Service)
		if i > 0 && e.Time.Before(got[i-1].Time) {
			t.Errorf("entry %d out of order", i)
		}
	}
	want := "transition:ledger log:validator gap: transition:ledger log:ledger log:merger gap: transition:ledger"
	if strings.Join(kinds, " ") != want {
		t.Errorf("timeline\n got %s\nwant %s", strings.Join(kinds, " "), want)
	}
	if got[2].Seconds != 0.99 || got[2].What != "nothing happened for 990ms" {
		t.Errorf("first gap %+v, want 990ms", got[2])
	}
	if got[0].Seconds != 1 || got[3].Seconds != 2 || got[len(got)-1].Seconds != 0 {
		t.Errorf("time in state: VALIDATING %v, MERGING %v, MERGE_FAILED %v; want 1, 2, none", got[0].Seconds, got[3].Seconds, got[len(got)-1].Seconds)
	}
	ss := steps(got)
	if len(ss) != 2 || ss[0].State != "VALIDATING" || ss[0].Length != time.Second || ss[1].State != "MERGING" || ss[1].Length != 2*time.Second {
		t.Errorf("steps %+v", ss)
	}
	if st := runState(got); st != "MERGE_FAILED" {
		t.Errorf("run state %q", st)
	}
	var out strings.Builder
	printSteps(&out, got)
	for _, want := range []string{"VALIDATING  1s", "MERGING     2s", "total       3s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("steps output lacks %q:\n%s", want, out.String())
		}
	}
}

// Without the ledger, the steps come from its saga_transition log lines;
// a run still in a step says so.
func TestStepsFromLogLinesWhileInFlight(t *testing.T) {
	entries := timeline([]traceEntry{
		{Time: at(0), Service: "ledger", Kind: "log", ToState: "VALIDATING", What: "saga_transition"},
		{Time: at(40), Service: "ledger", Kind: "log", ToState: "MERGING", What: "saga_transition"},
	}, time.Second)
	ss := steps(entries)
	if len(ss) != 2 || ss[0].Length != 40*time.Millisecond || !ss[1].Ongoing {
		t.Errorf("steps %+v", ss)
	}
}

// The reader returns only what was appended since its last read, keeps a
// half-written line for later, and starts over on a file rotated under
// its name.
func TestLogReaderFollowsAppendsAndRotation(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "merger.jsonl")
	line := func(ms int, msg string) string {
		return fmt.Sprintf(`{"time":%q,"level":"INFO","msg":%q,"service":"merger","correlation_id":"run-1"}`+"\n",
			at(ms).Format(time.RFC3339Nano), msg)
	}
	appendTo := func(s string) {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	whats := func(es []traceEntry) string {
		var ws []string
		for _, e := range es {
			ws = append(ws, e.What)
		}
		return strings.Join(ws, ",")
	}
	r := newLogReader(dir, "run-1")
	appendTo(line(0, "one") + line(1, "two"))
	second := line(2, "three")
	appendTo(second[:20])
	if got, err := r.read(); err != nil || whats(got) != "one,two" {
		t.Fatalf("first read: %q, %v", whats(got), err)
	}
	appendTo(second[20:])
	if got, _ := r.read(); whats(got) != "three" {
		t.Fatalf("second read: %q, want the completed line", whats(got))
	}
	if got, _ := r.read(); len(got) != 0 {
		t.Fatalf("nothing appended: %q", whats(got))
	}
	// Rotation: the file is renamed and a new one started.
	if err := os.Rename(name, filepath.Join(dir, "merger-2026-03-01T12-00-00.000.jsonl")); err != nil {
		t.Fatal(err)
	}
	appendTo(line(3, "four"))
	got, _ := r.read()
	if w := whats(got); !strings.Contains(w, "four") {
		t.Fatalf("after rotation: %q, want the new file's line", w)
	}
}
