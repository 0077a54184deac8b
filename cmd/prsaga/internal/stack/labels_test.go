package stack

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestServicesCarryProfilerLabels: each service's goroutines (its runners'
// workers, its relay) carry service=<name>, so that a CPU profile of one
// process splits by service.
func TestServicesCarryProfilerLabels(t *testing.T) {
	startTestStack(t)

	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	dump := buf.String()
	for _, name := range AllServices {
		label := `"service":"` + name + `"`
		if !strings.Contains(dump, label) {
			t.Errorf("no goroutine labelled %s", label)
		}
		// The relay of every service runs under its label.
		if !hasLabelledStack(dump, label, "outbox.(*Relay).Run") {
			t.Errorf("%s's relay does not carry %s", name, label)
		}
	}
}

// hasLabelledStack reports whether a goroutine record of a debug=1 dump
// carries label and has fn in its stack.
func hasLabelledStack(dump, label, fn string) bool {
	for _, rec := range strings.Split(dump, "\n\n") {
		if strings.Contains(rec, label) && strings.Contains(rec, fn) {
			return true
		}
	}
	return false
}
