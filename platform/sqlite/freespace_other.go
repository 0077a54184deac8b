//go:build !linux && !darwin

package sqlite

// freeBytes cannot tell the free room here: the conversion goes ahead.
func freeBytes(string) (int64, bool) { return 0, false }
