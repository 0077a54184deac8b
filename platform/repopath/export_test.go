package repopath

import (
	"sync/atomic"
	"testing"
	"time"
)

// CountBare counts Verify's bare-repository tests that reach the file
// system, with racy window w, for the rest of t; the cache starts empty.
func CountBare(t testing.TB, w time.Duration) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	oldBare, oldWindow := isBare, racyWindow
	isBare = func(dir string) bool { n.Add(1); return IsBare(dir) }
	racyWindow = w
	bareDirs.mu.Lock()
	clear(bareDirs.dirs)
	bareDirs.mu.Unlock()
	t.Cleanup(func() { isBare, racyWindow = oldBare, oldWindow })
	return &n
}

// Settled reports whether dir's times lie beyond the racy window.
func Settled(dir string) bool {
	s, ok := plainDirStamp(dir)
	cut := time.Now().Add(-racyWindow).UnixNano()
	return ok && s.mtime < cut && s.ctime < cut
}
