package repopath

import (
	"os"
	"sync"
	"time"
)

// A directory Verify found bare is remembered with its identity and
// times, and taken as bare again while a fresh lstat (which Verify makes
// anyway, for the symbolic-link check) shows the same device, inode,
// modification and change time: IsBare's three stats are then not made
// again (three of Verify's five system calls, on every merge, request
// check and index write; ~1% of a saga's CPU on the VM of
// docs/performance.md).
//
// It holds because IsBare asks only about the directory's entries (HEAD
// not a directory; objects and refs directories), and an entry cannot be
// added, removed, renamed or replaced without setting the directory's
// modification and change times to the present; an inode's type never
// changes; a replaced directory is another inode, and its times are its
// own. The one gap is the clock's granularity: a change within the same
// tick as the times remembered could leave them as they were. So a
// directory is remembered only if both times lie more than racyWindow
// before the lstat that read them (git's "racily clean" rule): any later
// change then stamps a later time. The symbolic-link checks are not cached.
var racyWindow = 2 * time.Second

// isBare is IsBare; tests count its calls.
var isBare = IsBare

// maxBareDirs bounds the cache: past it, it starts again empty.
const maxBareDirs = 4096

// dirStamp is what an lstat says of a directory; ino 0: nothing known.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64 // ns since the epoch
}

var bareDirs = struct {
	mu   sync.Mutex
	dirs map[string]dirStamp
}{dirs: map[string]dirStamp{}}

// plainDirStamp is plainDir with what the lstat read (no identity, so
// never cached, where the platform gives none: stamp_other.go).
func plainDirStamp(path string) (dirStamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return dirStamp{}, false
	}
	return stampOf(fi), true
}

// isBareAt reports IsBare(dir) for the directory that an lstat begun at
// asked found as s, from the cache when s is what was remembered.
func isBareAt(dir string, s dirStamp, asked time.Time) bool {
	if s.ino == 0 {
		return isBare(dir)
	}
	bareDirs.mu.Lock()
	seen, ok := bareDirs.dirs[dir]
	bareDirs.mu.Unlock()
	if ok && seen == s {
		return true
	}
	bare := isBare(dir)
	settled := asked.Add(-racyWindow).UnixNano()
	bareDirs.mu.Lock()
	defer bareDirs.mu.Unlock()
	switch {
	case !bare:
		delete(bareDirs.dirs, dir)
	case s.mtime < settled && s.ctime < settled:
		if len(bareDirs.dirs) >= maxBareDirs {
			clear(bareDirs.dirs)
		}
		bareDirs.dirs[dir] = s
	}
	return bare
}
