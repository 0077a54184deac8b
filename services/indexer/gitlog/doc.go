// Package gitlog reads, with go-git, what a merge brought into a bare
// repository under the repos dir (<reposDir>/<owner>/<name>.git): the
// messages of the commits reachable from the merge commit but not from its
// base, for the indexer's documents. It only reads. It keeps repositories
// open, the commits it decoded and, per repository, every commit the last
// merge it read reaches (closure.go: the next merge onto that target then
// reads only its own commits, however old its fork point) between calls
// (a commit never changes);
// what another process changes meanwhile — refs moved, objects packed — is
// seen because the merge commit is always looked up in the repository, and
// a failed read reloads go-git's pack indexes once.
package gitlog
