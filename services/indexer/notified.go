package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// OnNotified indexes the merged PR and answers indexed: OnNotifiedBatch
// with one event.
func (x *Indexer) OnNotified(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	commits, errs := x.OnNotifiedBatch(ctx, []contracts.Envelope{env}, []*slog.Logger{log})
	return commits[0], errs[0]
}

var _ step.BatchHandler = (*Indexer)(nil).OnNotifiedBatch

// OnNotifiedBatch indexes the merged PRs of envs in one index write and
// answers each event on its own: commits[i] emits envs[i]'s indexed (or
// step_failed) event, errs[i] says envs[i] is to be redelivered. It is the
// consumer's step.BatchHandler: bleve makes a segment per write, and the
// segments are merged in the background, so one write per batch instead of
// one per event is most of the indexer's cost. logs[i] is envs[i]'s logger.
//
// Idempotent: documents are upserted by PR id, so a redelivery — a crash
// after the write and before the commit, or a replay — writes the same
// document again, never a second one. Two events of one PR in a batch give
// one document (the later event's).
//
// Commit messages are best effort: a missing repository or commit, or any
// error reading it, is logged as a warning and the PR is indexed without
// them (a reindex adds them later).
//
// A failed write is retried up to Attempts times inside the call, the index
// reopened between tries; when a write of several documents fails, each is
// then written alone, so that a document the index refuses fails only its
// own event. An event whose document still cannot be written is answered
// step_failed(INDEXING, index_error) — retryable, so an operator retries
// the step once the index is repaired. Only two outcomes are errors (the
// event is redelivered with backoff, and after MaxDeliver the runner
// answers retries_exhausted): the context ending, and an index closed by
// its owner (ErrClosed: this instance is stopping, another may take the
// event); a payload that is not a notified event is one too. The handler
// cannot see the delivery count, so "N consecutive failures" is counted
// here, within one delivery; the whole retry takes at most the sum of
// Backoff plus two writes per attempt, well inside the runner's AckWait/2
// InProgress cadence.
func (x *Indexer) OnNotifiedBatch(ctx context.Context, envs []contracts.Envelope, logs []*slog.Logger) ([]step.Commit, []error) {
	commits := make([]step.Commit, len(envs))
	errs := make([]error, len(envs))
	var items []item
	for i, env := range envs {
		n, ok := env.Payload.(*contracts.Notified)
		if !ok {
			errs[i] = fmt.Errorf("indexer: unexpected payload %T", env.Payload)
			continue
		}
		items = append(items, item{i: i, n: n, log: logs[i], doc: x.document(ctx, env, n, logs[i])})
	}
	x.write(ctx, items)
	now := time.Now
	if x.Now != nil {
		now = x.Now
	}
	for _, it := range items {
		commits[it.i], errs[it.i] = x.answer(ctx, envs[it.i], it, len(items), now())
	}
	return commits, errs
}

// Document is the document the indexer writes for a notified event —
// commit messages and merge time included when History can read them — and
// false when env is not a notified event. `prsaga reindex` builds its
// documents with it, so that a rebuilt index holds what the indexer wrote.
func (x *Indexer) Document(ctx context.Context, env contracts.Envelope, log *slog.Logger) (Doc, bool) {
	n, ok := env.Payload.(*contracts.Notified)
	if !ok {
		return Doc{}, false
	}
	return x.document(ctx, env, n, log), true
}

func (x *Indexer) document(ctx context.Context, env contracts.Envelope, n *contracts.Notified, log *slog.Logger) Doc {
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
	return doc
}

// item is one event of a batch on its way through the index write.
type item struct {
	i   int // its place in the batch
	n   *contracts.Notified
	doc Doc
	log *slog.Logger
	// The write's outcome: written, or the last error after attempts.
	written  bool
	attempts int
	err      error
}

// answer turns an item's write outcome into its commit, or its error.
func (x *Indexer) answer(ctx context.Context, env contracts.Envelope, it item, batch int, at time.Time) (step.Commit, error) {
	n := it.n
	var typ string
	var payload any
	switch {
	case it.written:
		typ, payload = contracts.TypeIndexed, contracts.Indexed{Request: n.Request, MergeSHA: n.MergeSHA, Documents: 1}
	case ctx.Err() != nil || errors.Is(it.err, ErrClosed):
		return nil, fmt.Errorf("index %s: %w", n.PRID, it.err)
	default:
		typ, payload = contracts.TypeStepFailed, contracts.StepFailed{
			Request: n.Request, Step: contracts.StateIndexing, Code: contracts.CodeIndexError, Retryable: true,
			Reason: contracts.FitReason(fmt.Sprintf("the search index could not be written (%d attempts): %s", it.attempts, it.err)),
		}
	}
	out, err := contracts.Follow(env.Event, step.FollowID(contracts.ServiceIndexer, env), typ, contracts.ServiceIndexer, at, payload)
	if err != nil {
		return nil, err
	}
	log, messages := it.log, len(it.doc.Messages)
	return func(tx store.Tx) error {
		tx.AfterCommit(func() {
			if f, ok := payload.(contracts.StepFailed); ok {
				log.ErrorContext(ctx, "index write failed; step failed", "code", f.Code, "reason", f.Reason, "emitted_id", out.ID())
				return
			}
			log.InfoContext(ctx, "indexed", "merge_sha", n.MergeSHA, "messages", messages, "batch", batch, "emitted_id", out.ID())
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
