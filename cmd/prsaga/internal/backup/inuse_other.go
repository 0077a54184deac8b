//go:build !linux

package backup

// sqliteOpen cannot tell on this platform; restore relies on the other
// signs (the index's writer lock, the consumers' waiting pulls).
func sqliteOpen(path string) (bool, error) { return false, nil }
