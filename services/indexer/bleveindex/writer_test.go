package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/indexer"
)

// waitActivated waits for an Activate's answer, bounded.
func waitActivated(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Activate did not return")
		return nil
	}
}

// openWriter is OpenWriter of dir, closed when the test ends (closing
// twice is harmless).
func openWriter(t *testing.T, dir string) *Index {
	t.Helper()
	x, err := OpenWriter(dir, time.Second)
	if err != nil {
		t.Fatalf("OpenWriter = %v; want a writer or a standby", err)
	}
	t.Cleanup(func() { _ = x.Close() })
	return x
}

// TestStandbyTakesOverWhenTheWriterCloses: a second writer of an index
// waits as a standby — not open, saying who holds the index — through the
// writer's writes and reopens, and becomes the writer once it closes,
// with the writer's documents.
func TestStandbyTakesOverWhenTheWriterCloses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	a := openWriter(t, dir)
	if !a.Active() {
		t.Fatal("the first writer is not active")
	}
	b := openWriter(t, dir)
	if b.Active() {
		t.Fatal("the second writer is active while the first holds the index")
	}
	ready := b.Ready()
	if !errors.Is(ready, ErrStandby) || !strings.HasPrefix(ready.Error(), "standby: index "+dir+" held by another indexer (pid "+fmt.Sprint(os.Getpid())) {
		t.Fatalf("the standby's Ready = %v; want ErrStandby saying who holds the index", ready)
	}
	if err := b.Upsert(context.Background(), widgets42()); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("a standby's Upsert = %v, want ErrNotOpen", err)
	}
	if err := b.Reopen(); !errors.Is(err, ErrStandby) {
		t.Fatalf("a standby's Reopen = %v; want it refused (only Activate opens)", err)
	}

	done := make(chan error, 1)
	go func() { done <- b.Activate(context.Background()) }()
	upsert(t, a, widgets42())
	// The writer keeps its lock across a Reopen: no standby gets in
	// between bleve's close and open.
	if err := a.Reopen(); err != nil {
		t.Fatal(err)
	}
	if w, err := tryWriterLock(dir); err != nil || w != nil {
		w.release()
		t.Fatalf("the writer's lock after its Reopen: %v, %v; want it held", w, err)
	}
	upsert(t, a, gadgets7())
	select {
	case err := <-done:
		t.Fatalf("the standby became active (%v) while the writer holds the index", err)
	default:
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitActivated(t, done); err != nil {
		t.Fatalf("Activate after the writer closed: %v", err)
	}
	if !b.Active() || b.Ready() != nil {
		t.Fatalf("after the takeover: active %v, Ready %v", b.Active(), b.Ready())
	}
	if n := count(t, b); n != 2 {
		t.Errorf("the new writer sees %d documents, want the 2 written before", n)
	}
	// And the roles turn: an OpenWriter now is the standby.
	c := openWriter(t, dir)
	if c.Active() {
		t.Error("a third OpenWriter is active beside the new writer")
	}
}

// TestStandbyWaitEnds: a standby's Activate ends with its context, and
// with Close.
func TestStandbyWaitEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	a, b := openWriter(t, dir), openWriter(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Activate(ctx) }()
	cancel()
	if err := waitActivated(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("Activate after its context ended = %v, want context.Canceled", err)
	}
	go func() { done <- b.Activate(context.Background()) }()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitActivated(t, done); !errors.Is(err, indexer.ErrClosed) {
		t.Errorf("Activate after Close = %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
