package merger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Plan is one merge to perform.
type Plan struct {
	Repo, SourceBranch, TargetBranch, HeadSHA, Strategy string
	PRID                                                string
	PRNumber                                            int
	CorrelationID, Title, RequestedBy                   string
	When                                                time.Time
}

// Result of a merge (or of finding it done already).
type Result struct {
	MergeSHA      string
	BaseSHA       string
	AlreadyMerged bool
	ChangedPaths  []string
}

// Refusals the merge can answer with; anything else is transient.
var (
	ErrHeadMoved      = errors.New("source branch head moved")
	ErrNotFastForward = errors.New("not a fast-forward")
	ErrConflict       = errors.New("merge conflict")
	ErrNotFound       = errors.New("repository or branch not found")
)

// ConflictError lists the conflicting paths; it matches ErrConflict.
type ConflictError struct {
	Paths  []string
	Detail string
}

func (e *ConflictError) Error() string {
	if len(e.Paths) == 0 {
		return "merge conflict: " + e.cause()
	}
	return "merge conflict in " + strings.Join(e.Paths, ", ")
}
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Git performs merges. Implementations must be idempotent in effect: a
// merge already in the target is reported with AlreadyMerged, never redone.
type Git interface {
	Merge(ctx context.Context, p Plan) (Result, error)
}

// Merger handles validated events.
type Merger struct {
	Git Git
	Now func() time.Time
}

// OnValidated merges and returns the commit that emits the outcome.
func (m *Merger) OnValidated(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	v, ok := env.Payload.(*contracts.Validated)
	if !ok {
		return nil, fmt.Errorf("merger: unexpected payload %T", env.Payload)
	}
	p := Plan{
		Repo: v.Repo, SourceBranch: v.SourceBranch, TargetBranch: v.TargetBranch,
		HeadSHA: v.HeadSHA, Strategy: v.Strategy, PRID: v.PRID, PRNumber: v.PRNumber,
		CorrelationID: env.Meta.CorrelationID, Title: v.Title, RequestedBy: v.RequestedBy,
		When: m.Now(),
	}
	res, err := m.Git.Merge(ctx, p)
	if err != nil {
		f, refused := failure(err, v.Request)
		if !refused {
			return nil, fmt.Errorf("merge %s: %w", v.PRID, err)
		}
		out, ferr := contracts.Follow(env.Event, step.FollowID(contracts.ServiceMerger, env), contracts.TypeStepFailed, contracts.ServiceMerger, m.Now(), f)
		if ferr != nil {
			return nil, ferr
		}
		return func(tx store.Tx) error {
			tx.AfterCommit(func() { log.InfoContext(ctx, "merge refused", "code", f.Code, "reason", f.Reason) })
			return tx.Emit(out)
		}, nil
	}
	paths := res.ChangedPaths
	if len(paths) > contracts.MaxListItems {
		paths = paths[:contracts.MaxListItems]
	}
	out, err := contracts.Follow(env.Event, step.FollowID(contracts.ServiceMerger, env), contracts.TypeMerged, contracts.ServiceMerger, m.Now(), contracts.Merged{
		Request: v.Request, BaseSHA: res.BaseSHA, MergeSHA: res.MergeSHA,
		AlreadyMerged: res.AlreadyMerged, ChangedPaths: paths,
	})
	if err != nil {
		return nil, err
	}
	return func(tx store.Tx) error {
		tx.AfterCommit(func() {
			log.InfoContext(ctx, "merged", "merge_sha", res.MergeSHA, "base_sha", res.BaseSHA, "already_merged", res.AlreadyMerged, "strategy", v.Strategy)
		})
		return tx.Emit(out)
	}, nil
}

// failure maps a refusal to step_failed(MERGING); refused is false for
// transient errors, which are retried.
func failure(err error, r contracts.Request) (f contracts.StepFailed, refused bool) {
	f = contracts.StepFailed{Request: r, Step: contracts.StateMerging}
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		f.Code, f.Conflicts = contracts.CodeConflict, capList(ce.Paths)
		f.Reason = conflictReason(r, ce)
	case errors.Is(err, ErrHeadMoved):
		f.Code = contracts.CodeHeadMoved
		f.Reason = fmt.Sprintf("%s no longer points at %s: the checks seen were for another commit", r.SourceBranch, r.HeadSHA)
	case errors.Is(err, ErrNotFastForward):
		f.Code = contracts.CodeNotFastForward
		f.Reason = fmt.Sprintf("%s cannot be fast-forwarded to %s", r.TargetBranch, r.HeadSHA)
	case errors.Is(err, ErrNotFound):
		f.Code, f.Reason = contracts.CodeNotFound, err.Error()
	default:
		return f, false
	}
	f.Reason = contracts.FitReason(f.Reason)
	return f, true
}

func capList(ps []string) []string {
	if len(ps) > 50 {
		return ps[:50]
	}
	return ps
}
