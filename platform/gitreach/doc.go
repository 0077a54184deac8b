// Package gitreach tells whether a commit is on a branch of a repository
// under the repos dir — reachable from refs/heads/<branch>, read loose then
// packed as git reads it — for `prsaga ledger verify`, which checks that
// every merged saga's merge commit is still on its target branch. It only
// reads.
package gitreach
