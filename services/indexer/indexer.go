package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/store"
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
	// idempotent, all or none, persisted when it returns.
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

// OnNotified indexes the merged PR and answers indexed.
//
// Commit messages are best effort: a missing repository or commit, or any
// error reading it, is logged as a warning and the PR is indexed without
// them (a reindex adds them later).
//
// A failed write is retried up to Attempts times inside the call, the index
// reopened between tries. If it still fails, the answer is
// step_failed(INDEXING, index_error) — retryable, so an operator retries the
// step once the index is repaired. Only two outcomes return an error (the
// event is redelivered with backoff, and after MaxDeliver the runner answers
// retries_exhausted): the context ending, and an index closed by its owner
// (ErrClosed: this instance is stopping, another may take the event). The
// handler cannot see the delivery count, so "N consecutive failures" is
// counted here, within one delivery; the whole retry takes at most the sum
// of Backoff plus Attempts writes, well inside the runner's AckWait/2
// InProgress cadence.
func (x *Indexer) OnNotified(ctx context.Context, env contracts.Envelope, log *slog.Logger) (runner.Commit, error) {
	n, ok := env.Payload.(*contracts.Notified)
	if !ok {
		return nil, fmt.Errorf("indexer: unexpected payload %T", env.Payload)
	}
	doc := Doc{
		PRID: n.PRID, Repo: n.Repo, PRNumber: n.PRNumber,
		TargetBranch: n.TargetBranch, SourceBranch: n.SourceBranch,
		Title: n.Title, RequestedBy: n.RequestedBy, MergeSHA: n.MergeSHA,
		ChangedPaths: n.ChangedPaths,
		// Without the merge commit's time, the notified event's: the
		// closest the event carries.
		MergedAt: env.Event.Time(),
	}
	x.addHistory(ctx, &doc, log)

	var typ string
	var payload any
	attempts, err := x.write(ctx, doc, log)
	switch {
	case err == nil:
		typ, payload = contracts.TypeIndexed, contracts.Indexed{Request: n.Request, MergeSHA: n.MergeSHA, Documents: 1}
	case ctx.Err() != nil || errors.Is(err, ErrClosed):
		return nil, fmt.Errorf("index %s: %w", n.PRID, err)
	default:
		typ, payload = contracts.TypeStepFailed, contracts.StepFailed{
			Request: n.Request, Step: contracts.StateIndexing, Code: contracts.CodeIndexError, Retryable: true,
			Reason: clip(fmt.Sprintf("the search index could not be written (%d attempts): %s", attempts, err)),
		}
	}
	now := time.Now
	if x.Now != nil {
		now = x.Now
	}
	out, err := contracts.Follow(env.Event, runner.NewID(), typ, contracts.ServiceIndexer, now(), payload)
	if err != nil {
		return nil, err
	}
	return func(tx store.Tx) error {
		tx.AfterCommit(func() {
			if f, ok := payload.(contracts.StepFailed); ok {
				log.ErrorContext(ctx, "index write failed; step failed", "code", f.Code, "reason", f.Reason, "emitted_id", out.ID())
				return
			}
			log.InfoContext(ctx, "indexed", "merge_sha", n.MergeSHA, "messages", len(doc.Messages), "emitted_id", out.ID())
		})
		return tx.Emit(out)
	}, nil
}

// addHistory fills in the commit messages and the merge time, if it can.
func (x *Indexer) addHistory(ctx context.Context, doc *Doc, log *slog.Logger) {
	if x.History == nil {
		return
	}
	m, err := x.History.Merged(ctx, doc.Repo, doc.MergeSHA)
	if err != nil {
		if ctx.Err() == nil {
			log.WarnContext(ctx, "indexing without commit messages", "merge_sha", doc.MergeSHA, "err", err)
		}
		return
	}
	doc.Messages = m.Messages
	if !m.CommittedAt.IsZero() {
		// Stable across replays, unlike the event's time.
		doc.MergedAt = m.CommittedAt
	}
	if m.Truncated {
		log.InfoContext(ctx, "commit messages truncated", "messages", len(m.Messages))
	}
}

// write upserts doc, retrying and reopening the index in between. It
// returns how many writes it tried and the last error.
func (x *Indexer) write(ctx context.Context, doc Doc, log *slog.Logger) (int, error) {
	attempts := x.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	backoff := x.Backoff
	if len(backoff) == 0 {
		backoff = DefaultBackoff
	}
	var err error
	for i := 1; ; i++ {
		if err = x.Index.Upsert(ctx, doc); err == nil {
			return i, nil
		}
		if ctx.Err() != nil || errors.Is(err, ErrClosed) || i >= attempts {
			return i, err
		}
		log.WarnContext(ctx, "index write failed; reopening the index", "attempt", i, "err", err)
		t := time.NewTimer(backoff[min(i, len(backoff))-1])
		select {
		case <-ctx.Done():
			t.Stop()
			return i, err
		case <-t.C:
		}
		if rerr := x.Index.Reopen(); rerr != nil {
			if errors.Is(rerr, ErrClosed) {
				return i, rerr
			}
			log.WarnContext(ctx, "reopening the index failed", "err", rerr)
		}
	}
}

// clip makes s fit a step_failed reason: one line of valid UTF-8, at most
// contracts.MaxReason bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\n", "; "), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) <= contracts.MaxReason {
		return s
	}
	n := contracts.MaxReason - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
