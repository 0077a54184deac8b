// Package revwalk lists the commits one commit reaches and others do not —
// `git rev-list tip ^base…` — reading history as git does: newest
// committer date first, stopping a few commits after only excluded ones
// are left, so that it reads the commits in question and the few around
// their fork point, not the whole history. The indexer lists with it the
// commits a merge brought (their messages), the merger the commits a
// squash folds in (their subjects). It reads commits through a function
// its caller gives (a cache, a repository) and only reads.
package revwalk
