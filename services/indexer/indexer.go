package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// Index is where merged PRs go; Upsert replaces by PR id.
type Index interface {
	Upsert(ctx context.Context, docs ...bleveindex.Doc) error
}

// Indexer handles notified events.
type Indexer struct {
	Index Index
	Now   func() time.Time
}

// OnNotified indexes the merged PR. An index error is returned, so the
// event is redelivered with backoff until the delivery budget is spent
// (then the runner answers step_failed(INDEXING, retries_exhausted)).
func (x *Indexer) OnNotified(ctx context.Context, env contracts.Envelope, log *slog.Logger) (runner.Commit, error) {
	n, ok := env.Payload.(*contracts.Notified)
	if !ok {
		return nil, fmt.Errorf("indexer: unexpected payload %T", env.Payload)
	}
	doc := bleveindex.Doc{
		PRID: n.PRID, Repo: n.Repo, PRNumber: n.PRNumber,
		TargetBranch: n.TargetBranch, SourceBranch: n.SourceBranch,
		Title: n.Title, MergeSHA: n.MergeSHA, ChangedPaths: n.ChangedPaths,
		MergedAt: env.Event.Time(),
	}
	if err := x.Index.Upsert(ctx, doc); err != nil {
		return nil, fmt.Errorf("index %s: %w", n.PRID, err)
	}
	out, err := contracts.Follow(env.Event, runner.NewID(), contracts.TypeIndexed, contracts.ServiceIndexer, x.Now(), contracts.Indexed{
		Request: n.Request, MergeSHA: n.MergeSHA, Documents: 1,
	})
	if err != nil {
		return nil, err
	}
	return func(tx *sqlite.Tx) error {
		tx.AfterCommit(func() { log.InfoContext(ctx, "indexed", "merge_sha", n.MergeSHA) })
		return tx.Emit(out)
	}, nil
}
