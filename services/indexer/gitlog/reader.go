package gitlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/platform/revwalk"
	"github.com/prsaga/prsaga/services/indexer"
)

// Bounds of one Merged call.
const (
	// MaxMessages bounds the messages returned.
	MaxMessages = 200
	// MaxMessageBytes bounds one message (longer ones are cut).
	MaxMessageBytes = 4 << 10
	// MaxWalk bounds the commits read: a merge of a long-lived branch, or
	// a base far behind, must not read the whole history.
	MaxWalk = 5000
)

// Reader reads the repositories under one directory. It keeps the
// repositories it read open, and the commits it decoded, for the next calls
// (see repos.go); it is safe for concurrent use.
type Reader struct {
	root    repopath.Root
	commits *commits
	// maxClosure bounds a repository's closure (closure.go).
	maxClosure int

	mu    sync.Mutex // guards repos and clock
	repos map[string]*repo
	clock uint64
}

var _ indexer.History = (*Reader)(nil)

// New returns a reader of the repositories under reposDir. The directory
// need not exist yet: until it does, every repository is missing.
func New(reposDir string) (*Reader, error) {
	return &Reader{root: repopath.New(reposDir), commits: newCommits(commitBudget), maxClosure: maxClosure, repos: map[string]*repo{}}, nil
}

// Merged returns the messages of the commits merge commit mergeSHA brought
// into repo: those reachable from it but not from its first parent (the
// target head it was made onto; for a squash or fast-forward that is the
// commit itself), newest first, at most MaxMessages. A missing repository
// or commit gives an error matching indexer.ErrNotFound.
func (r *Reader) Merged(ctx context.Context, repo, mergeSHA string) (indexer.Merge, error) {
	return r.MergedSince(ctx, repo, mergeSHA, "")
}

// MergedSince is Merged with an explicit base: the commits reachable from
// mergeSHA but not from baseSHA ("" means the first parent). A fast-forward
// needs it: its first parent is only the PR's previous commit.
func (r *Reader) MergedSince(ctx context.Context, repo, mergeSHA, baseSHA string) (indexer.Merge, error) {
	dir, err := r.path(repo)
	if err != nil {
		return indexer.Merge{}, err
	}
	if err := contracts.ValidateSHA("merge_sha", mergeSHA); err != nil {
		return indexer.Merge{}, err
	}
	if baseSHA != "" {
		if err := contracts.ValidateSHA("base_sha", baseSHA); err != nil {
			return indexer.Merge{}, err
		}
	}
	rp := r.open(dir)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	// The tip is always read from the repository, never from the decoded
	// commits: whether the repository holds it is part of the answer.
	tip, err := rp.get(plumbing.NewHash(mergeSHA))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return indexer.Merge{}, fmt.Errorf("commit %s of %s: %w", mergeSHA, repo, indexer.ErrNotFound)
	}
	if err != nil {
		return indexer.Merge{}, fmt.Errorf("commit %s of %s: %w", mergeSHA, repo, err)
	}
	r.commits.put(commitKey{dir, tip.Hash}, tip)
	// Commits reachable from the tip are in the repository whenever the
	// tip is: the walk (and the first parent) may come from the decoded
	// commits. An explicit base is read from the repository, like the tip.
	w := &revwalk.Walk{Get: func(h plumbing.Hash) (*object.Commit, error) { return r.commit(rp, h) }, Limit: MaxWalk}
	var bases []*object.Commit
	switch {
	case baseSHA != "":
		w.Reads++
		b, err := rp.get(plumbing.NewHash(baseSHA))
		if err != nil {
			return indexer.Merge{}, fmt.Errorf("history of %s in %s: base %s: %w", mergeSHA, repo, baseSHA, err)
		}
		bases = append(bases, b)
	case len(tip.ParentHashes) > 0:
		b, err := w.Commit(tip.ParentHashes[0])
		if err != nil {
			return indexer.Merge{}, fmt.Errorf("history of %s in %s: %w", mergeSHA, repo, err)
		}
		bases = append(bases, b)
	}
	var commits []*object.Commit
	var truncated, done bool
	if len(bases) == 1 {
		commits, truncated, done, err = r.fromClosure(ctx, rp, tip, bases[0])
	}
	if !done && err == nil {
		commits, truncated, err = w.Only(ctx, tip, bases...)
	}
	if err != nil {
		return indexer.Merge{}, fmt.Errorf("history of %s in %s: %w", mergeSHA, repo, err)
	}
	m := indexer.Merge{CommittedAt: tip.Committer.When.UTC(), Truncated: truncated}
	for _, c := range commits {
		if len(m.Messages) == MaxMessages {
			m.Truncated = true
			break
		}
		m.Messages = append(m.Messages, cut(c.Message))
	}
	return m, nil
}

// path validates a repository id and maps it to its bare repository under
// the root (platform/repopath refuses anything that would leave it — also
// through a symbolic link). A missing repository matches indexer.ErrNotFound.
func (r *Reader) path(repo string) (string, error) {
	// Verify is Resolve's check in a third of its system calls; the
	// repository is then read at its path under the root, which it checked.
	err := r.root.Verify(repo)
	if errors.Is(err, repopath.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", indexer.ErrNotFound, err)
	}
	if err != nil {
		return "", err
	}
	return r.root.Path(repo)
}

// cut bounds a message to MaxMessageBytes of valid UTF-8.
func cut(msg string) string {
	msg = strings.TrimRight(msg, "\n")
	if len(msg) > MaxMessageBytes {
		msg = msg[:MaxMessageBytes]
	}
	return strings.ToValidUTF8(msg, "")
}
