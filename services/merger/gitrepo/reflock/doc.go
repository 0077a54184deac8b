// Package reflock moves a branch under git's own ref lock
// (refs/heads/<b>.lock), crash-safely (update.go): the lock names the
// merger holding it (lockholder.go) and carries its flock (liveness.go;
// the holder file linked as the lock is kept from lock to lock: kept.go),
// so that a lock left by a killed merger is broken by the next one while
// git's locks and live writers' are respected (reflock.go). A ref file,
// once in place, is never written again: each update renames a new file
// over it, after checking that its lock was not broken meanwhile.
package reflock
