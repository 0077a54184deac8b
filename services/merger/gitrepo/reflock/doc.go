// Package reflock moves a branch under git's own ref lock
// (refs/heads/<b>.lock), crash-safely (update.go): the lock names the
// merger holding it (lockholder.go) and carries its flock (liveness.go),
// so that a lock left by a killed merger is broken by the next one while
// git's locks and live writers' are respected (reflock.go).
package reflock
