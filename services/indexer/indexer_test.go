package indexer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/indexer"
)

const mergeSHA = "89abcdef0123456789abcdef0123456789abcdef"

var eventTime = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

// index is a fake indexer.Index: upsert answers each call in turn.
type index struct {
	mu      sync.Mutex
	upsert  func(n int) error
	docs    []indexer.Doc
	reopens int
}

func (x *index) Upsert(_ context.Context, docs ...indexer.Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.docs = append(x.docs, docs...)
	if x.upsert == nil {
		return nil
	}
	return x.upsert(len(x.docs))
}

func (x *index) Reopen() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reopens++
	return nil
}

type history func(repo, sha string) (indexer.Merge, error)

func (h history) Merged(_ context.Context, repo, sha string) (indexer.Merge, error) {
	return h(repo, sha)
}

func notified(t *testing.T) contracts.Envelope {
	t.Helper()
	req := contracts.Request{PRID: "acme/widgets#5", Repo: "acme/widgets", PRNumber: 5, SourceBranch: "fix/token", TargetBranch: "main",
		HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", Title: "Fix the token refresh", RequestedBy: "alice"}
	return notifiedEvent(t, req, "run1", 2, "auth/token.go")
}

// notifiedEvent is the notifier's notified event of req in run <run>
// (id "<run>.n", caused by "<run>.m"), opened as the runner hands it over.
func notifiedEvent(t *testing.T, req contracts.Request, run string, attempt int, paths ...string) contracts.Envelope {
	t.Helper()
	return contractstest.Envelope(t, run+".n", contracts.TypeNotified, contracts.Source(contracts.ServiceNotifier), req.PRID, eventTime,
		contracts.Notified{Request: req, MergeSHA: mergeSHA, ChangedPaths: paths},
		contracts.Meta{CorrelationID: run, CausationID: run + ".m", Attempt: attempt})
}

// handle runs OnNotified and commits its answer; it returns the emitted
// event (nil when the handler returned an error) and the log.
func handle(t *testing.T, x *indexer.Indexer, ctx context.Context) (*contracts.Envelope, string, error) {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if x.Backoff == nil {
		x.Backoff = []time.Duration{time.Millisecond}
	}
	commit, err := x.OnNotified(ctx, notified(t), log)
	if err != nil {
		if commit != nil {
			t.Error("OnNotified returned an error and a commit")
		}
		return nil, buf.String(), err
	}
	env := emitted.Answer(t, sqlitetest.Open(t), commit)
	e := env.Event
	if env.Meta.CorrelationID != "run1" || env.Meta.CausationID != "run1.n" || env.Meta.Attempt != 2 || e.Source() != "/prsaga/indexer" {
		t.Errorf("answer meta = %+v from %s; want run1, caused by run1.n, attempt 2, from /prsaga/indexer", env.Meta, e.Source())
	}
	return &env, buf.String(), nil
}

func TestOnNotifiedIndexesTheMerge(t *testing.T) {
	committed := time.Date(2030, 5, 6, 7, 0, 0, 0, time.UTC)
	idx := &index{}
	x := &indexer.Indexer{Index: idx, History: history(func(repo, sha string) (indexer.Merge, error) {
		if repo != "acme/widgets" || sha != mergeSHA {
			return indexer.Merge{}, fmt.Errorf("asked for %s %s", repo, sha)
		}
		return indexer.Merge{Messages: []string{"Merge pull request #5", "Handle expired tokens"}, CommittedAt: committed}, nil
	})}
	env, _, err := handle(t, x, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := env.Payload.(*contracts.Indexed); !ok || got.Documents != 1 || got.MergeSHA != mergeSHA {
		t.Fatalf("answer = %s %+v; want indexed, 1 document, %s", env.Event.Type(), env.Payload, mergeSHA)
	}
	want := indexer.Doc{
		PRID: "acme/widgets#5", Repo: "acme/widgets", PRNumber: 5, TargetBranch: "main", SourceBranch: "fix/token",
		Title: "Fix the token refresh", RequestedBy: "alice", MergeSHA: mergeSHA,
		ChangedPaths: []string{"auth/token.go"}, Messages: []string{"Merge pull request #5", "Handle expired tokens"},
		MergedAt: committed,
	}
	if len(idx.docs) != 1 || fmt.Sprint(idx.docs[0]) != fmt.Sprint(want) {
		t.Errorf("indexed %+v\nwant %+v", idx.docs, want)
	}
}

func TestOnNotifiedWithoutHistory(t *testing.T) {
	idx := &index{}
	x := &indexer.Indexer{Index: idx, History: history(func(string, string) (indexer.Merge, error) {
		return indexer.Merge{}, fmt.Errorf("repository acme/widgets: %w", indexer.ErrNotFound)
	})}
	env, log, err := handle(t, x, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Event.Type() != contracts.TypeIndexed {
		t.Fatalf("answer = %s, want indexed", env.Event.Type())
	}
	if d := idx.docs[0]; d.Messages != nil || !d.MergedAt.Equal(eventTime) || d.Title == "" {
		t.Errorf("doc = %+v; want no messages, merged at the event's time %s", d, eventTime)
	}
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "without commit messages") {
		t.Errorf("log %q does not warn about the missing messages", log)
	}
}

func TestOnNotifiedRetriesAndReopens(t *testing.T) {
	idx := &index{upsert: func(n int) error {
		if n == 1 {
			return errors.New("segment write: input/output error")
		}
		return nil
	}}
	env, log, err := handle(t, &indexer.Indexer{Index: idx}, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Event.Type() != contracts.TypeIndexed || len(idx.docs) != 2 || idx.reopens != 1 {
		t.Errorf("answer %s after %d writes and %d reopens; want indexed after 2 writes and 1 reopen", env.Event.Type(), len(idx.docs), idx.reopens)
	}
	if !strings.Contains(log, "reopening the index") {
		t.Errorf("log %q does not say the index was reopened", log)
	}
}

func TestOnNotifiedAnswersIndexError(t *testing.T) {
	idx := &index{upsert: func(int) error { return errors.New("segment write: no space left on device") }}
	env, _, err := handle(t, &indexer.Indexer{Index: idx, Attempts: 4}, t.Context())
	if err != nil {
		t.Fatalf("OnNotified = %v; want a step_failed answer, not a redelivery", err)
	}
	f, ok := env.Payload.(*contracts.StepFailed)
	if !ok {
		t.Fatalf("answer = %s, want step_failed", env.Event.Type())
	}
	if f.Step != contracts.StateIndexing || f.Code != contracts.CodeIndexError || !f.Retryable ||
		!strings.Contains(f.Reason, "no space left") || !strings.Contains(f.Reason, "4 attempts") {
		t.Errorf("step_failed = %+v; want INDEXING, index_error, retryable, naming the error and 4 attempts", f)
	}
	if len(idx.docs) != 4 || idx.reopens != 3 {
		t.Errorf("%d writes and %d reopens, want 4 and 3", len(idx.docs), idx.reopens)
	}
}

func TestOnNotifiedRedeliversWhenStopping(t *testing.T) {
	for name, tc := range map[string]struct {
		upsert func(int) error
		cancel bool
	}{
		"index closed by its owner": {upsert: func(int) error { return fmt.Errorf("index /x: %w", indexer.ErrClosed) }},
		"context ended":             {upsert: func(int) error { return context.Canceled }, cancel: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			idx := &index{upsert: func(n int) error {
				if tc.cancel {
					cancel()
				}
				return tc.upsert(n)
			}}
			_, _, err := handle(t, &indexer.Indexer{Index: idx}, ctx)
			if err == nil {
				t.Fatal("OnNotified answered; want an error (redelivery)")
			}
			if len(idx.docs) != 1 || idx.reopens != 0 {
				t.Errorf("%d writes and %d reopens; want 1 and 0: no retry while stopping", len(idx.docs), idx.reopens)
			}
		})
	}
}

func TestReasonIsClipped(t *testing.T) {
	long := strings.Repeat("é", contracts.MaxReason)
	idx := &index{upsert: func(int) error { return errors.New(long + "\nsecond line") }}
	env, _, err := handle(t, &indexer.Indexer{Index: idx, Attempts: 1}, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	f := env.Payload.(*contracts.StepFailed)
	if len(f.Reason) > contracts.MaxReason || strings.Contains(f.Reason, "\n") || !strings.HasSuffix(f.Reason, "…") {
		t.Errorf("reason of %d bytes ending %q; want at most %d, one line, ending in …", len(f.Reason), f.Reason[len(f.Reason)-8:], contracts.MaxReason)
	}
}
