package gitobj

import (
	"os"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/gittest"
)

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// TestSessionStorageOnlyWhenPacksAreRead checks the session's storage of
// kept-open packs: a merge that reads only loose objects never makes it; one
// that reads a packed object makes it once, reads through it, and the end of
// the session closes its packs (no descriptor outlives the merge) and
// switches back to the storage that opens a pack per read.
func TestSessionStorageOnlyWhenPacksAreRead(t *testing.T) {
	s := newBareStore(t, Durability{})
	packed := blob(s, "packed content\n")
	if err := s.WriteObjects(packed); err != nil {
		t.Fatal(err)
	}
	// Packed alone (nothing refers to it, so repack would leave it loose).
	gittest.RunInput(t, s.Dir(), packed.Hash().String()+"\n", "pack-objects", "-q", "objects/pack/pack")
	gittest.Run(t, s.Dir(), "prune-packed")
	s.Refresh()
	loose := blob(s, "loose content\n")
	if err := s.WriteObjects(loose); err != nil {
		t.Fatal(err)
	}
	s.cache.Clear() // both were cached as they were written
	before := openFiles(t)

	end := s.Session()
	if _, err := s.Object(plumbing.BlobObject, loose.Hash()); err != nil {
		t.Fatal(err)
	}
	if s.kept != nil {
		t.Fatal("reading a loose object made the session's pack storage")
	}
	if _, err := s.Object(plumbing.BlobObject, packed.Hash()); err != nil {
		t.Fatalf("packed object in a session: %v", err)
	}
	kept := s.kept
	if kept == nil || s.Storer() != kept {
		t.Fatal("reading a packed object did not go through the session's storage")
	}
	if openFiles(t) <= before {
		t.Fatal("the session's storage keeps no pack open")
	}
	end()
	if s.kept != nil || s.Storer() == kept {
		t.Fatal("the session's storage outlived the session")
	}
	if after := openFiles(t); after != before {
		t.Fatalf("%d descriptors open after the session, %d before", after, before)
	}

	// Outside a session a packed object is still read (a pack opened and
	// closed per read).
	s.cache.Clear()
	if _, err := s.Object(plumbing.BlobObject, packed.Hash()); err != nil {
		t.Fatalf("packed object outside a session: %v", err)
	}
	if after := openFiles(t); after != before {
		t.Fatalf("%d descriptors open after a read outside a session, %d before", after, before)
	}
}
