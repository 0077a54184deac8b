package gitrepo

import "github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"

// DefaultCacheBytes is the budget of a Repos' object cache when Options
// leave it zero.
const DefaultCacheBytes = gitobj.DefaultCacheBytes

// Options of a Repos.
type Options struct {
	// Sync is PRSAGA_DURABILITY=sync (design §5): new objects, the ref's
	// new value and the directories they were added to are fsynced before
	// the ref moves, and the refs directory after, so that a merge
	// survives power loss. Without it (process) nothing is fsynced: a
	// write(2) lands in the page cache, which outlives a crash of the
	// process, and the ref still moves by an atomic rename under its lock.
	Sync bool
	// OnFsync, if set, is called with the path of every file or directory
	// fsynced, once the fsync succeeded; for tests and metrics.
	OnFsync func(path string)
	// CacheBytes bounds the objects kept across merges, all repositories
	// together (gitobj/cache.go); zero is DefaultCacheBytes.
	CacheBytes int64
}
