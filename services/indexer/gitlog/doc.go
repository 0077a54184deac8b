// Package gitlog reads, with go-git, what a merge brought into a bare
// repository under the repos dir (<reposDir>/<owner>/<name>.git): the
// messages of the commits reachable from the merge commit but not from its
// base, for the indexer's documents. It only reads. It keeps repositories
// open and the commits it decoded between calls (a commit never changes);
// what another process changes meanwhile — refs moved, objects packed — is
// seen because the merge commit is always looked up in the repository, and
// a failed read reloads go-git's pack indexes once.
package gitlog
