package logtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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

// Wait returns once another goroutine writes the line, and fails the test
// when nothing does within its time.
func TestWaitWokenByTheWrite(t *testing.T) {
	log, buf := logtest.New()
	go func() {
		log.Info("other")
		log.Info("done", "n", 1)
	}()
	if got := buf.Wait(t, "done", 10*time.Second); len(got) != 1 || got[0]["n"] != float64(1) {
		t.Fatalf("Wait = %v; want the one done record", got)
	}

	failed := make(chan bool)
	go func() {
		ft := &fatalT{TB: t}
		defer func() { failed <- ft.fatal }()
		defer func() { recover() }()
		buf.Wait(ft, "never", 20*time.Millisecond)
	}()
	if !<-failed {
		t.Error("Wait for a line never written did not fail the test")
	}
}

// fatalT records a Fatalf instead of ending the test.
type fatalT struct {
	testing.TB
	fatal bool
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(string, ...any) {
	f.fatal = true
	panic("fatal")
}
