// Package gitrepo is the merger's git layer: it performs the saga's pivot
// step, the merge itself, in bare repositories under the repos dir.
//
// go-git only fast-forwards, so the three-way merge is built here on go-git's
// object model: a tree-level merge (treemerge.go) that takes whatever only
// one side changed, merges the mode and the lines of a regular file both
// sides changed as git does (filemerge.go), and reports every other path
// both sides changed differently as a conflict. The line merge is this
// package's own code, written from the algorithms' published descriptions:
// each side aligned with the base by a histogram diff with git's sliding
// of change groups (linediff.go), then the two sides' changes merged by
// the rules of git's merge, including its union style (linemerge.go). It
// never guesses: where git's own merge (merge-ort) might reach a different
// clean result — renames, a directory one side removed and the other adds
// to, symlink and submodule changes on both sides, unusual file modes,
// criss-cross histories, binary files, merge attributes, lines repeated so
// often that git aligns them with another diff — it reports a conflict
// instead. Every clean tree it writes is the tree `git merge-tree
// --write-tree <target> <head>` writes; the differential tests hold it to
// that against the git command, on random histories and on a corpus of
// merges built from real source text (corpus_test.go).
//
// New objects are written before the branch moves (and fsynced first in
// PRSAGA_DURABILITY=sync, Options.Sync), and the branch is moved under
// git's own ref lock (refs/heads/<b>.lock, created exclusively; the new
// value renamed over the ref while it is held), so a merge cooperates with
// `git push` and other writers of the same repository: a lost race is
// detected and the merge is recomputed on the new target head, never
// applied over someone else's commit. The lock names the merger holding
// it, so that a lock left by a killed merger is broken by the next merge
// instead of blocking the branch (reflock.go); nobody else's lock is ever
// broken.
//
// Merges are idempotent: before merging, and again after every lost race, a
// merge looks for the PR's work already in the target (the PR head reachable
// from the target head, or a commit carrying the PR's `Prsaga-PR` trailer)
// and reports it instead of merging twice.
package gitrepo
