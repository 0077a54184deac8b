package validator

import "errors"

// ErrNotFound marks a repository or branch that does not exist; match with
// errors.Is. The error's text names which one.
var ErrNotFound = errors.New("not found")

// Heads reads the current head commit of a branch.
//
// Head returns the 40-hex sha of refs/heads/<branch> in repo ("owner/name"),
// read fresh on every call (another process moves refs). It returns an error
// matching ErrNotFound when the repository or the branch does not exist; any
// other error is transient (the event is retried). Implementations must be
// safe for concurrent use.
type Heads interface {
	Head(repo, branch string) (sha string, err error)
}

// BranchHeads is a Heads that reads several branches of one repository in
// one call: the repository is looked up and opened once, not once per
// branch (the validator reads two heads per request). HeadsOf answers
// what Head would for each branch in turn, stopping at the first error.
type BranchHeads interface {
	Heads
	HeadsOf(repo string, branches ...string) (shas []string, err error)
}
