// Package gitrefs reads refs the way git's "files" ref backend stores them:
// a loose file <gitDir>/<ref>, else the ref's line in packed-refs (a loose
// ref overrides a packed one). It is the one reader both the merger and the
// validator use; what a caller does with a symbolic ref, and how strictly it
// checks a sha, stays with the caller.
//
// Reading loose-then-packed always sees a value the ref really had: git
// replaces a loose ref by rename, rewrites packed-refs atomically
// (packed-refs.lock + rename), and pack-refs writes packed-refs before it
// deletes the loose files.
package gitrefs
