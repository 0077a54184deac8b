//go:build !linux

package reflock

// Without renameat2 and leases, every ref update writes a fresh file and
// renames it over the ref (spare.go).

func reuse(string, []byte) error { return errNoLeases }

func exchange(string, string) error { return errNoExchange }

func localFS(string) bool { return false }
