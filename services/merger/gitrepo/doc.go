// Package gitrepo is the merger's git layer: it performs the saga's pivot
// step, the merge itself, in bare repositories under the repos dir.
//
// It composes four packages, one job each, and adds what ties them to a
// merge request (opening repositories, the plan, the journal, the commit
// messages, the retries):
//
//   - gitobj: a repository's objects — go-git's storage, the object cache
//     all repositories share, loose objects written, refs read, fsyncs;
//   - history: the in-memory commit graph — merge bases, rev-list;
//   - engine: the three-way merge of trees, files and lines, pure over
//     the objects: it returns new objects, never writes one or a ref;
//   - reflock: git's ref lock, held and broken crash-safely, and the ref
//     moved under it.
//
// engine and history read through gitobj; nothing but gitrepo moves a
// ref, and the engine does not import reflock.
//
// go-git only fast-forwards, so the three-way merge is built here on go-git's
// object model: a tree-level merge (engine/treemerge.go) that takes whatever only
// one side changed, merges the mode and the lines of a regular file both
// sides changed as git does (engine/filemerge.go), and reports every other path
// both sides changed differently as a conflict. The line merge is this
// package's own code, written from the algorithms' published descriptions:
// each side aligned with the base by a histogram diff with git's sliding
// of change groups (engine/linediff.go), then the two sides' changes merged by
// the rules of git's merge, including its union style (engine/linemerge.go).
// How a file's contents merge is decided by its `merge` attribute, read as
// git reads gitattributes (engine/attributes.go) from the repository's
// info/attributes and the .gitattributes files of the TARGET's tree — the
// policy of the branch merged into, as newer git and forges use it, so
// that a PR cannot switch conflict detection off for its own merge: unset
// or text → line merge, binary or -merge → conflict, union → union merge,
// a custom driver → a conflict naming it; other attributes change
// nothing. A criss-cross history (two merge bases) is merged against a
// virtual base, the merge of its merge bases, as git's merge-ort does
// (engine/virtualbase.go); bases that do not merge cleanly, or more than two, are
// a conflict. It never guesses: where git's own merge (merge-ort) might
// reach a different clean result — renames git might pair otherwise (a
// rename on one side, exact or with changed contents, is merged with the
// other side's change where git's pairing is beyond doubt:
// engine/renamemerge.go, and engine/inexactrenames.go, which estimates git's
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
// instead of blocking the branch (reflock/reflock.go); nobody else's lock
// is ever broken.
//
// Merge takes a context and stops when it is cancelled — in its history
// walks, at every directory and file it merges, in the line diffs of large
// files, while it waits for a busy branch — up to the moment it takes the
// ref lock; from there the ref update runs to its end (merge.go).
//
// Merges are idempotent: before merging, and again after every lost race, a
// merge looks for the PR's work already in the target (the PR head reachable
// from the target head, or a commit the merger's journal recorded for this
// PR before moving the ref: alreadymerged.go, journal.go) and reports it
// instead of merging twice. A commit message proves nothing: trailers are
// written for people, never trusted.
package gitrepo
