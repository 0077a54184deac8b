package gitrepo

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// maxSquashWalk bounds the walk collecting the subjects of squashed commits.
const maxSquashWalk = 10000

// squashedSubjects returns the subjects of the commits a squash of head
// onto a target with merge base base folds in (`git log base..head`), oldest
// first, at most maxSquashSubjects, plus how many more there were.
func (r *Repo) squashedSubjects(ctx context.Context, head, base plumbing.Hash) ([]string, int, error) {
	commits, err := r.history.RevList(ctx, head, base, maxSquashWalk)
	if err != nil {
		return nil, 0, fmt.Errorf("squashed commits: %w", err)
	}
	sort.SliceStable(commits, func(i, j int) bool { // oldest first
		return commits[i].Committer.When.Before(commits[j].Committer.When)
	})
	var subjects []string
	for _, c := range commits[:min(len(commits), maxSquashSubjects)] {
		subjects = append(subjects, subject(c.Message))
	}
	return subjects, len(commits) - len(subjects), nil
}
