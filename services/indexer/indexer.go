package indexer

import (
	"context"
	"errors"
	"time"
)

// Doc is one merged pull request as the index holds it; PRID is its key.
type Doc struct {
	PRID         string // e.g. "acme/widgets#42"
	Repo         string
	PRNumber     int
	TargetBranch string
	SourceBranch string
	Title        string
	RequestedBy  string // the author of the merge request
	MergeSHA     string
	ChangedPaths []string
	Messages     []string // commit messages of the commits the merge brought in
	MergedAt     time.Time
}

// ErrNotFound is matched (errors.Is) by a History error when the
// repository or the merge commit does not exist.
var ErrNotFound = errors.New("not found")

// ErrClosed is matched (errors.Is) by an Index error after its owner closed
// it (the service is stopping): not a failure of the index, so the event is
// redelivered rather than failed.
var ErrClosed = errors.New("index closed")

// Index is where merged PRs go. Implementations are safe for concurrent use.
type Index interface {
	// Upsert writes docs, each replacing the document with its PR id:
	// idempotent, all or none, persisted when it returns. One call with
	// many documents costs much less than one call per document.
	Upsert(ctx context.Context, docs ...Doc) error
	// Reopen closes and reopens the index: the remedy for a handle a failed
	// write may have left broken. It fails with ErrClosed after Close.
	Reopen() error
}

// Merge is what a repository tells about a merge commit.
type Merge struct {
	// Messages of the commits reachable from the merge commit but not from
	// its base, newest first, bounded (Truncated says when some were left).
	Messages  []string
	Truncated bool
	// CommittedAt is the merge commit's committer time.
	CommittedAt time.Time
}

// History reads merges from the repositories. Implementations are safe for
// concurrent use.
type History interface {
	// Merged describes merge commit mergeSHA of repo ("owner/name"). An
	// error matching ErrNotFound means the repository or the commit is
	// missing.
	Merged(ctx context.Context, repo, mergeSHA string) (Merge, error)
}

// Defaults of Indexer.
const (
	DefaultAttempts = 3
)

// DefaultBackoff is the wait before the second and third write attempt.
var DefaultBackoff = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}

// Indexer handles notified events. Its zero values work except Index.
type Indexer struct {
	Index Index
	// History adds commit messages and the merge time; nil indexes without.
	History History
	// Attempts bounds the writes of one event (0: DefaultAttempts), Backoff
	// the waits between them (empty: DefaultBackoff; the last repeats).
	Attempts int
	Backoff  []time.Duration
	Now      func() time.Time
}
