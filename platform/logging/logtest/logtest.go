// Package logtest captures what code under test logs: a buffer that
// several goroutines may write while the test reads it, and a JSON slog
// logger over one, with the records decoded for assertions. For tests only.
package logtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: servers and relays
// under test write their logs (or a command its output) from their own
// goroutines while the test polls what was written.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write (Wait's signal)
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// next returns a channel the next Write closes.
func (b *Buffer) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{})
	}
	return b.written
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes returns a copy of everything written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// New returns a logger writing JSON records of every level, Debug up, into
// a new Buffer.
func New() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Record is one decoded JSON log record: "time", "level", "msg" and the
// attributes, as encoding/json decodes them (numbers are float64).
type Record map[string]any

// Records decodes the buffer's JSON lines (see Parse).
func (b *Buffer) Records(t testing.TB) []Record {
	t.Helper()
	return Parse(t, b.Bytes())
}

// Parse decodes JSON lines (a log file, a command's output); a line that
// is not a JSON object fails the test: a log line cut in two, or mixed
// with other output, is a bug.
func Parse(t testing.TB, lines []byte) []Record {
	t.Helper()
	var recs []Record
	for _, line := range bytes.Split(lines, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// Find returns the records whose message is msg, in the order logged.
func (b *Buffer) Find(t testing.TB, msg string) []Record {
	t.Helper()
	var found []Record
	for _, r := range b.Records(t) {
		if r["msg"] == msg {
			found = append(found, r)
		}
	}
	return found
}

// Wait returns the records whose message is msg once there is one, woken
// by each write; it fails the test if none is written within d.
func (b *Buffer) Wait(t testing.TB, msg string, d time.Duration) []Record {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		written := b.next() // before reading, so that no write is missed
		if found := b.Find(t, msg); len(found) > 0 {
			return found
		}
		select {
		case <-written:
		case <-deadline.C:
			t.Fatalf("no %q line after %s; logged:\n%s", msg, d, b.String())
			return nil
		}
	}
}
