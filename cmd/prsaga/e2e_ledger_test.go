package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/runner"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	ledgerserver "github.com/prsaga/prsaga/services/ledger/server"
)

// startWith starts a stack of some services (all when none are named).
func startWith(t *testing.T, opts stack.Options) *stack.Stack {
	t.Helper()
	if !opts.NoHTTP && opts.HTTPListener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		opts.HTTPListener = ln
	}
	if opts.Config.NATSURL == "" {
		opts.NATSListen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start stack %v: %v", opts.Services, err)
	}
	t.Cleanup(st.Stop)
	return st
}

func waitState(t *testing.T, c *client.Client, pr string, want contracts.State, attempt int) client.Saga {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		s, err := c.Saga(ctx, pr)
		if err == nil && s.State == want && s.Attempts >= attempt {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not reach %s (attempt %d): last %+v, %v", pr, want, attempt, s, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// streamEvents reads every event of a PR on subject from stream PRSAGA.
func streamEvents(t *testing.T, b *bus.Bus, subject, pr string) []contracts.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := b.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	var out []contracts.Envelope
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
		if err != nil {
			return out // drained
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil {
			t.Fatal(err)
		}
		env, err := contracts.Open(e)
		if err != nil {
			t.Fatal(err)
		}
		if e.Subject() == pr {
			out = append(out, env)
		}
	}
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, &out, &errb)
	return code, out.String(), errb.String()
}

// The seed's first test: the merge succeeds, the index step fails (the
// indexer's deliveries fail until it gives up) → MERGE_FAILED at INDEXING,
// merged; a retry replays notified → MERGED; git holds one merge commit.
// Then `prsaga trace` shows the run across every service's logs.
func TestEndToEndIndexFailsThenRetryMerges(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxDeliver = 3
	bare, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	const pr = "acme/widgets#42"
	// The indexer runs in a stack of its own (sharing the NATS server), so
	// that the fault hook sees only its deliveries: attempt 1's notified
	// fails on every delivery but the last, where the runner gives up and
	// reports step_failed(INDEXING, retries_exhausted).
	main := startApart(t, cfg, "indexer", failFirstDeliveries(contracts.TypeNotified, pr, cfg.MaxDeliver, "injected: the index is unavailable"))

	c := client.New(main.URL, "")
	setCI(t, c, "acme/widgets", head, "success")
	acc := mustMerge(t, c, request("acme/widgets", 42, "feature/hello", head))
	s := waitState(t, c, pr, contracts.StateMergeFailed, 1)
	if s.FailedStep != "INDEXING" || !s.Merged || s.MergeSHA == "" || !strings.Contains(s.LastError, contracts.CodeRetriesExhausted) {
		t.Fatalf("after the index failure: %+v, want MERGE_FAILED at INDEXING, merged, retries_exhausted", s)
	}

	code, out, errOut := runCLI(t, "retry", pr, "--api", main.URL)
	if code != exitOK || !strings.Contains(out, "INDEXING attempt 2") {
		t.Fatalf("prsaga retry: exit %d\n%s%s", code, out, errOut)
	}
	s = waitState(t, c, pr, contracts.StateMerged, 2)
	if s.CorrelationID != acc.CorrelationID || !s.Merged {
		t.Fatalf("after the retry: %+v", s)
	}
	retried := false
	for _, tr := range s.Transitions {
		retried = retried || (tr.From == contracts.StateMergeFailed && tr.To == contracts.StateIndexing && tr.Actor == "local")
	}
	if !retried {
		t.Fatalf("history lacks the retry by local: %+v", s.Transitions)
	}
	commits := gittest.Run(t, bare, "log", "--format=%H", "--grep", "Prsaga-PR: "+pr, "main")
	if strings.Count(commits, "\n") != 0 || commits != s.MergeSHA {
		t.Fatalf("commits with the PR's trailer on main: %q, want exactly the merge %s", commits, s.MergeSHA)
	}
	if code, out, _ := runCLI(t, "retry", pr, "--api", main.URL); code != exitFailed || out != "" {
		t.Fatalf("retry of a merged saga: exit %d %q, want 1", code, out)
	}

	code, out, errOut = runCLI(t, "trace", acc.CorrelationID, "--api", main.URL, "--logs", cfg.LogDir, "--json")
	if code != exitOK {
		t.Fatalf("prsaga trace: exit %d %s", code, errOut)
	}
	var entries []traceEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatal(err)
	}
	services := map[string]bool{}
	kinds := map[string]bool{}
	for i, e := range entries {
		services[e.Service], kinds[e.Kind] = true, true
		if i > 0 && e.Time.Before(entries[i-1].Time) {
			t.Fatalf("trace not sorted by time at %d", i)
		}
	}
	for _, want := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		if !services[want] {
			t.Errorf("trace has no line of %s (services %v)", want, services)
		}
	}
	if !kinds["log"] || !kinds["transition"] || !kinds["event"] {
		t.Errorf("trace kinds %v, want log, transition and event", kinds)
	}
}

// The seed's second test: two ledger instances — the stack's, and a second
// one over the same database file — apply the same real event at the same
// moment: one transition, one no-op.
func TestEndToEndTwoLedgersApplyTheSameEvent(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	const pr = "acme/widgets#5"
	// Hold the consumer of the run's indexed event (the ledger: the
	// validator's lock ends at merged) just before its commit, until
	// released — or a minute, so that a failing test cannot hold the
	// stack's shutdown for ever.
	arrived := make(chan contracts.Envelope, 4)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	fault := func(point string, env contracts.Envelope) error {
		if point == runner.FaultAfterEffect && env.Event.Type() == contracts.TypeIndexed && env.Event.Subject() == pr {
			arrived <- env
			select {
			case <-release:
			case <-time.After(time.Minute):
			}
		}
		return nil
	}
	st := startWith(t, stack.Options{Config: cfg, Fault: fault})
	dir, _ := cfg.SQLiteDir()
	db, err := psqlite.Open(context.Background(), filepath.Join(dir, "ledger.sqlite"), psqlite.Options{}, ledgerserver.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var logs logtest.Buffer
	second, err := ledgerserver.New(ledgerserver.Options{DB: db, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}

	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")
	mustMerge(t, c, request("acme/widgets", 5, "feature/hello", head))
	var env contracts.Envelope
	select {
	case env = <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the indexed event never reached the ledger")
	}
	var res ledger.Result
	var applyErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, applyErr = second.Apply(context.Background(), env)
	}()
	once.Do(func() { close(release) })
	<-done
	if applyErr != nil {
		t.Fatalf("second ledger: %v", applyErr)
	}
	s := waitState(t, c, pr, contracts.StateMerged, 1)
	if len(s.Transitions) != 5 {
		t.Fatalf("%d transitions, want 5 (one INDEXING -> MERGED): %+v", len(s.Transitions), s.Transitions)
	}
	logLines := logs.String() + readFile(t, filepath.Join(cfg.LogDir, "ledger.jsonl"))
	if n := strings.Count(logLines, `"to_state":"MERGED"`); n != 1 {
		t.Fatalf("%d saga_transition lines to MERGED across both ledgers, want 1", n)
	}
	t.Logf("second ledger: duplicate=%v status=%q (the other instance did the rest)", res.Duplicate, res.Status)
	if !res.Duplicate && res.Status != ledger.StatusApplied {
		t.Fatalf("second ledger result %+v: want applied or duplicate", res)
	}
}

// Two operators press retry at once: one 202, one 409, one replay.
func TestEndToEndConcurrentRetries(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	const pr = "acme/widgets#6"
	st := startWith(t, stack.Options{Config: cfg})
	c := client.New(st.URL, "")
	ctx := context.Background()
	setCI(t, c, "acme/widgets", head, "failure")
	acc := mustMerge(t, c, request("acme/widgets", 6, "feature/hello", head))
	if s := waitState(t, c, pr, contracts.StateMergeFailed, 1); s.FailedStep != "VALIDATING" {
		t.Fatalf("%+v, want failed at VALIDATING", s)
	}
	setCI(t, c, "acme/widgets", head, "success")
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = c.Retry(ctx, pr, client.RetryOptions{Force: true})
		}()
	}
	close(start)
	wg.Wait()
	ok, conflict := 0, 0
	for _, err := range errs {
		var ae *client.APIError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ae) && ae.Status == 409:
			conflict++
		default:
			t.Fatalf("retry: %v", err)
		}
	}
	if ok != 1 || conflict != 1 {
		t.Fatalf("answers %v: want one 202 and one 409", errs)
	}
	waitState(t, c, pr, contracts.StateMerged, 2)
	var replays int
	for _, e := range streamEvents(t, st.Bus, contracts.ReplaySubject(contracts.TypeMergeRequested), pr) {
		if e.Meta.ReplayOf != "" {
			replays++
			if e.Meta.ReplayOf != acc.EventID || e.Meta.CorrelationID != acc.CorrelationID || e.Meta.Attempt != 2 {
				t.Errorf("replay %+v, want of %s, attempt 2", e.Meta, acc.EventID)
			}
		}
	}
	if replays != 1 {
		t.Fatalf("%d replayed requests in the stream, want 1", replays)
	}
}
