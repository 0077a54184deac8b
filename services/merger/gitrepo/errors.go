package gitrepo

import (
	"errors"
	"fmt"

	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Sentinel errors; match them with errors.Is (they are always wrapped with
// context).
var (
	// ErrRepoNotFound: no bare repository at the repository's path.
	ErrRepoNotFound = errors.New("repository not found")
	// ErrInvalid: a repository id, branch, sha or merge request field is
	// malformed. Nothing invalid ever touches a path or a ref.
	ErrInvalid = errors.New("invalid")
	// ErrBranchNotFound: the source or target branch does not exist.
	ErrBranchNotFound = gitobj.ErrBranchNotFound
	// ErrHeadMoved: the source branch no longer points at the requested
	// head sha (and the PR's work is not in the target yet).
	ErrHeadMoved = errors.New("head moved")
	// ErrNotFastForward: strategy fast-forward, but the target head is not
	// an ancestor of the PR head.
	ErrNotFastForward = errors.New("not a fast-forward")
	// ErrConflict: the merge cannot be done without a human; the error is a
	// *ConflictError naming the paths.
	ErrConflict = engine.ErrConflict
	// ErrTargetBusy: the target branch stayed locked by another writer, or
	// kept moving, for the whole retry budget. Nothing was changed; trying
	// again later is safe. When the lock stays, the error names the lock
	// file and its holder. A lock left by a killed merger — in any pid
	// namespace, on any node sharing the volume — is broken by the next
	// merge; any other lock left by a crash (git's, or an older merger's
	// without a liveness flock from another machine or pid namespace) must
	// be removed by an operator (git itself refuses to write the branch
	// until then).
	ErrTargetBusy = errors.New("target branch busy")
	// ErrLockLost: the target's ref lock was broken while this merge held
	// it (another merger judged it dead: on NFS, this process was cut off
	// from the server for longer than the server's lease), so the ref was
	// not moved. Nothing was changed; trying again later is safe (the
	// merge is planned again on the branch's head then).
	ErrLockLost = reflock.ErrLockLost
)

// ConflictError is the ErrConflict a merge returns: the conflicting paths
// (sorted, at most MaxConflictPaths) and a human sentence saying why.
// Paths is empty when the histories themselves cannot be merged (no merge
// base; more than two merge bases, or two that do not merge cleanly).
type ConflictError = engine.ConflictError

// MaxConflictPaths caps ConflictError.Paths, like every list in an event.
const MaxConflictPaths = engine.MaxConflictPaths

// FaultRefLocked is the fault point (platform/fault) hit right after a ref
// lock is taken: crash tests make a merger die there, holding the lock.
const FaultRefLocked = reflock.FaultRefLocked

// FaultRefChecked is the fault point hit once the target's old value was
// checked under the ref lock and the new value written, right before the
// lock is verified and the ref renamed.
const FaultRefChecked = reflock.FaultRefChecked

// invalidf builds an ErrInvalid error.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
