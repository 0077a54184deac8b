package history

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/platform/revwalk"
)

// RevList returns the commits reachable from head but not from exclude —
// `git rev-list exclude..head` — newest first by committer date, reading at
// most max commits (a longer list is cut short, silently).
//
// It is git's walk (platform/revwalk): its cost is the PR's commits and the
// target's commits since the fork, not the length of the history. The
// price, as in git, is that a commit dated (much) earlier than an ancestor
// of it can stop the walk too soon; this only feeds a squash commit's
// message, never a tree or a ref.
func (r *History) RevList(ctx context.Context, head, exclude plumbing.Hash, max int) ([]*object.Commit, error) {
	w := &revwalk.Walk{Get: r.s.Commit, Limit: max}
	tip, err := w.Commit(head)
	if err != nil {
		return nil, err
	}
	base, err := w.Commit(exclude)
	if err != nil {
		return nil, err
	}
	commits, _, err := w.Only(ctx, tip, base)
	return commits, err
}
