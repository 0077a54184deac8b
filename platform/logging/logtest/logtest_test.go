package logtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prsaga/prsaga/platform/logging/logtest"
)

// Concurrent writers and a reader (under -race), then every record found.
func TestBufferConcurrentAndFind(t *testing.T) {
	log, buf := logtest.New()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				log.Debug("tick", "g", g, "i", i)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	log.Warn("done", "n", 200)
	if got := len(buf.Find(t, "tick")); got != 200 {
		t.Errorf("Find(tick) = %d records, want 200", got)
	}
	done := buf.Find(t, "done")
	if len(done) != 1 || done[0]["level"] != "WARN" || done[0]["n"] != float64(200) {
		t.Errorf("Find(done) = %v, want one WARN record with n=200", done)
	}
	if got := len(buf.Records(t)); got != 201 {
		t.Errorf("Records = %d, want 201", got)
	}
	if b := buf.Bytes(); string(b) != buf.String() || strings.Count(string(b), "\n") != 201 {
		t.Errorf("Bytes and String disagree or miss lines: %d lines", strings.Count(string(b), "\n"))
	}
}

// Bytes is a copy: writing after it leaves it as it was.
func TestBytesIsACopy(t *testing.T) {
	var buf logtest.Buffer
	fmt.Fprint(&buf, "a")
	b := buf.Bytes()
	fmt.Fprint(&buf, "b")
	if string(b) != "a" || buf.String() != "ab" {
		t.Errorf("Bytes = %q then String = %q; want a, ab", b, buf.String())
	}
}
