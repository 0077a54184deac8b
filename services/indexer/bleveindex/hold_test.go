package bleveindex

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestHoldExcludesOpen: Hold takes the very lock Open takes, both ways,
// and makes an index where there is none.
func TestHoldExcludesOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	release, err := Hold(dir, 100*time.Millisecond) // none there yet: made
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 100*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a held index: %v, want ErrLocked", err)
	}
	if _, err := Hold(dir, 100*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second Hold: %v, want ErrLocked", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	x, err := Open(dir, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("Open after release: %v", err)
	}
	if _, err := Hold(dir, 100*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("Hold of an open index: %v, want ErrLocked", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	release, err = Hold(dir, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("Hold after Close: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}
