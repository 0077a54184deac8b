// Package engine is the merger's three-way merge: trees (treemerge.go),
// a file both sides changed (filemerge.go), its lines (linediff.go,
// linemerge.go), the merge attributes that decide how (attributes.go),
// renames (renames.go, renamemerge.go, renamenames.go, inexactrenames.go)
// and criss-cross histories (virtualbase.go). It reads a repository's
// objects through package gitobj and its merge bases through Bases, and
// returns the new objects of a clean merge for its caller to write: it
// never writes an object, and never touches a ref or a lock (package
// reflock). Its rule, and the tests holding it to git, are package
// gitrepo's (doc.go there) and docs/merging.md.
package engine
