package indexer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/indexer"
)

// calls is a fake indexer.Index that records each Upsert call's PR ids and
// answers it with upsert (nil: success).
type calls struct {
	mu      sync.Mutex
	upsert  func(ids []string) error
	calls   [][]string
	reopens int
}

func (c *calls) Upsert(_ context.Context, docs ...indexer.Doc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.PRID
	}
	c.calls = append(c.calls, ids)
	if c.upsert == nil {
		return nil
	}
	return c.upsert(ids)
}

func (c *calls) Reopen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reopens++
	return nil
}

// notifiedOf is PR acme/widgets#n's notified event, id "run<n>.n".
func notifiedOf(t *testing.T, n int) contracts.Envelope {
	t.Helper()
	req := contracts.Request{PRID: contracts.PRID("acme/widgets", n), Repo: "acme/widgets", PRNumber: n, SourceBranch: fmt.Sprintf("pr/%d", n),
		TargetBranch: "main", HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", Title: fmt.Sprintf("Change %d", n), RequestedBy: "alice"}
	return notifiedEvent(t, req, fmt.Sprintf("run%d", n), 1, fmt.Sprintf("f_%d.txt", n))
}

// batch is n notified events (PRs 1..n) and their loggers.
func batch(t *testing.T, n int) ([]contracts.Envelope, []*slog.Logger) {
	envs := make([]contracts.Envelope, n)
	logs := make([]*slog.Logger, n)
	for i := range n {
		envs[i] = notifiedOf(t, i+1)
		logs[i] = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	return envs, logs
}

// A batch of N notified events is one index write of N documents and N
// indexed answers, each caused by its own event.
func TestOnNotifiedBatchWritesOnce(t *testing.T) {
	const n = 5
	idx := &calls{}
	x := &indexer.Indexer{Index: idx}
	envs, logs := batch(t, n)
	commits, errs := x.OnNotifiedBatch(t.Context(), envs, logs)
	if len(commits) != n || len(errs) != n {
		t.Fatalf("%d commits and %d errors for %d events", len(commits), len(errs), n)
	}
	want := []string{"acme/widgets#1", "acme/widgets#2", "acme/widgets#3", "acme/widgets#4", "acme/widgets#5"}
	if len(idx.calls) != 1 || !slices.Equal(idx.calls[0], want) {
		t.Fatalf("index writes = %q; want one write of %q", idx.calls, want)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("event %d: %v", i, errs[i])
		}
		a := emitted.Answer(t, sqlitetest.Open(t), commits[i])
		got, ok := a.Payload.(*contracts.Indexed)
		if !ok || got.PRID != want[i] || got.Documents != 1 || a.Meta.CausationID != envs[i].Event.ID() || a.Meta.CorrelationID != envs[i].Meta.CorrelationID {
			t.Errorf("answer %d = %s %+v %+v; want indexed %s caused by %s", i, a.Event.Type(), a.Payload, a.Meta, want[i], envs[i].Event.ID())
		}
	}
}

// A document the index refuses fails its own event (step_failed
// index_error, after its attempts) and no other; an event that is no
// notified event is retried alone.
func TestOnNotifiedBatchIsolatesFailures(t *testing.T) {
	bad := "acme/widgets#3"
	idx := &calls{upsert: func(ids []string) error {
		if slices.Contains(ids, bad) {
			return errors.New("field messages: term too long")
		}
		return nil
	}}
	x := &indexer.Indexer{Index: idx, Attempts: 2, Backoff: []time.Duration{time.Millisecond}}
	envs, logs := batch(t, 5)
	wrong := notifiedOf(t, 6)
	wrong.Payload = &contracts.Merged{}
	envs, logs = append(envs, wrong), append(logs, logs[0])
	commits, errs := x.OnNotifiedBatch(t.Context(), envs, logs)

	for i := range 5 {
		if errs[i] != nil {
			t.Fatalf("event %d: %v; want an answer", i, errs[i])
		}
		a := emitted.Answer(t, sqlitetest.Open(t), commits[i])
		if envs[i].Event.Subject() == bad {
			f, ok := a.Payload.(*contracts.StepFailed)
			if !ok || f.Code != contracts.CodeIndexError || f.Step != contracts.StateIndexing || !f.Retryable ||
				!strings.Contains(f.Reason, "term too long") || !strings.Contains(f.Reason, "2 attempts") {
				t.Errorf("answer for %s = %s %+v; want step_failed(INDEXING, index_error) after 2 attempts", bad, a.Event.Type(), a.Payload)
			}
			continue
		}
		if a.Event.Type() != contracts.TypeIndexed {
			t.Errorf("answer for %s = %s %+v; want indexed", envs[i].Event.Subject(), a.Event.Type(), a.Payload)
		}
	}
	if errs[5] == nil || commits[5] != nil {
		t.Errorf("event of the wrong payload: commit %v, error %v; want only an error (redelivery)", commits[5] != nil, errs[5])
	}
	// The batch, each of its documents alone, then the refused one again
	// after a reopen.
	want := [][]string{{"acme/widgets#1", "acme/widgets#2", bad, "acme/widgets#4", "acme/widgets#5"},
		{"acme/widgets#1"}, {"acme/widgets#2"}, {bad}, {"acme/widgets#4"}, {"acme/widgets#5"}, {bad}}
	if fmt.Sprint(idx.calls) != fmt.Sprint(want) || idx.reopens != 1 {
		t.Errorf("index writes = %q, %d reopens; want %q and 1", idx.calls, idx.reopens, want)
	}
}

// An index closed by its owner while the documents are written one by one
// answers those already written and leaves the others to be redelivered,
// even one refused before: this instance is stopping.
func TestOnNotifiedBatchStopsWhenClosed(t *testing.T) {
	idx := &calls{upsert: func(ids []string) error {
		switch {
		case len(ids) > 1:
			return errors.New("segment write: input/output error")
		case ids[0] == "acme/widgets#2":
			return errors.New("refused")
		case ids[0] == "acme/widgets#3":
			return fmt.Errorf("index /x: %w", indexer.ErrClosed)
		}
		return nil
	}}
	x := &indexer.Indexer{Index: idx}
	envs, logs := batch(t, 4)
	commits, errs := x.OnNotifiedBatch(t.Context(), envs, logs)
	if errs[0] != nil || emitted.Answer(t, sqlitetest.Open(t), commits[0]).Event.Type() != contracts.TypeIndexed {
		t.Errorf("PR 1, written before the close: error %v; want indexed", errs[0])
	}
	for i := 1; i < 4; i++ {
		if !errors.Is(errs[i], indexer.ErrClosed) || commits[i] != nil {
			t.Errorf("PR %d: error %v, commit %v; want ErrClosed and no commit (redelivery)", i+1, errs[i], commits[i] != nil)
		}
	}
	if len(idx.calls) != 4 || idx.reopens != 0 {
		t.Errorf("index writes = %q, %d reopens; want the batch and PRs 1-3 alone, no reopen", idx.calls, idx.reopens)
	}
}
