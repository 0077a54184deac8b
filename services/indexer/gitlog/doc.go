// Package gitlog reads, with go-git, what a merge brought into a bare
// repository under the repos dir (<reposDir>/<owner>/<name>.git): the
// messages of the commits reachable from the merge commit but not from its
// base, for the indexer's documents. It only reads; each call opens the
// repository afresh (go-git is not safe for concurrent use, and another
// process moves refs and repacks meanwhile).
package gitlog
