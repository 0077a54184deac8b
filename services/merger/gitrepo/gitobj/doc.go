// Package gitobj is a bare repository's objects as the merger uses them:
// go-git's storage of the git directory (store.go), the byte-bounded
// object cache all the repositories of a merger share (cache.go), loose
// objects written crash-safely (objects.go), refs read as git's "files"
// backend keeps them (refs.go; package reflock writes them), and the
// fsyncs of PRSAGA_DURABILITY=sync (durable.go).
package gitobj
