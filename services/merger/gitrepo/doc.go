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
// the rules of git's merge, including its union style (linemerge.go).
// How a file's contents merge is decided by its `merge` attribute, read as
// git reads gitattributes (attributes.go) from the repository's
// info/attributes and the .gitattributes files of the TARGET's tree — the
// policy of the branch merged into, as newer git and forges use it, so
// that a PR cannot switch conflict detection off for its own merge: unset
// or text → line merge, binary or -merge → conflict, union → union merge,
// a custom driver → a conflict naming it; other attributes change
// nothing. A criss-cross history (two merge bases) is merged against a
// virtual base, the merge of its merge bases, as git's merge-ort does
// (virtualbase.go); bases that do not merge cleanly, or more than two, are
// a conflict. It never guesses: where git's own merge (merge-ort) might
// reach a different clean result — renames git might pair otherwise (a
// rename on one side, exact or with changed contents, is merged with the
// other side's change where git's pairing is beyond doubt:
// renamemerge.go, and inexactrenames.go, which estimates git's
// similarity score and keeps clear of its 50% threshold), a directory one
// side removed and the other adds to, symlink and submodule changes on
// both sides, unusual file
// modes, binary files, files too large to merge line by line, lines
// repeated so often that git aligns them with another diff,
// merge.renormalize, merge.conflictStyle diff3 where it changes git's
// result — it reports a conflict instead, with a reason naming
// the case. Every clean tree it writes is the tree `git merge-tree
// --write-tree <target> <head>` writes (with the target's attributes); the
// differential tests hold it to that against the git command, on random
// histories and on a corpus of merges built from real source text
// (corpus_test.go), and `prsaga merge-check` (Checker, check.go) replays a
// repository's own merge commits the same way, in memory.
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
// from the target head, or a commit the merger's journal recorded for this
// PR before moving the ref: alreadymerged.go, journal.go) and reports it
// instead of merging twice. A commit message proves nothing: trailers are
// written for people, never trusted.
package gitrepo
