package sqlite

// WALVFS is the name of the VFS stores open their files through.
const WALVFS = walVFS

// WALCounts returns the writes SQLite asked of WAL files opened through
// WALVFS and the writes that VFS made of them, since the process started.
func WALCounts() (writes, flushes int64) { return walWrites.Load(), walFlushes.Load() }
