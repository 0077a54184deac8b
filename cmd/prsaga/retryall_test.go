package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/runner"
)

// A webhook receiver was down: 200 sagas ended MERGE_FAILED at NOTIFYING.
// prsaga retry --all --dry-run lists them and changes nothing; a bulk retry
// at 100/s interrupted part-way and run again replays each saga exactly
// once, never more than the rate in any second, and every saga ends
// MERGED.
func TestBulkRetryOfNotifyingFailures(t *testing.T) {
	const prs, rate = 200, 100
	main, repo := startNotifierDown(t, prs)
	c := client.New(main.URL, "")
	for i := 1; i <= prs; i++ {
		head := repo.SHA[fmt.Sprint(i)]
		setCI(t, c, "acme/widgets", head, "success")
		mustMerge(t, c, request("acme/widgets", i, fmt.Sprintf("pr/%d", i), head))
	}
	failedAtNotifying := func() int {
		n := 0
		for _, s := range allSagas(t, c) {
			if s.State == contracts.StateMergeFailed && s.FailedStep == contracts.StateNotifying {
				n++
			}
		}
		return n
	}
	waitCond(t, 2*time.Minute, "200 sagas failed at NOTIFYING", func() bool { return failedAtNotifying() == prs })

	code, out, errOut := runCLI(t, "retry", "--all", "--dry-run", "--step", "NOTIFYING", "--api", main.URL, "--json")
	var dry client.BulkReport
	if code != exitOK || json.Unmarshal([]byte(out), &dry) != nil {
		t.Fatalf("retry --all --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if !dry.DryRun || dry.Matched != prs || dry.Replayed != prs || len(dry.Items) != prs || dry.Items[0].Outcome != "would_replay" || dry.Items[0].LastError == "" {
		t.Fatalf("dry run: %+v (first item %+v), want %d sagas that would be replayed, each with its error", dry, dry.Items[0], prs)
	}
	if n := failedAtNotifying(); n != prs {
		t.Fatalf("after the dry run %d sagas are still failed, want all %d (nothing changes)", n, prs)
	}
	if code, _, _ := runCLI(t, "retry", "--all", "--step", "MERGING", "--api", main.URL); code != exitOK {
		t.Fatalf("retry --all of a step nothing failed at: exit %d", code)
	}

	// First run, interrupted once a quarter of the sagas were replayed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		first.Store(int32(run(ctx, []string{"retry", "--all", "--step", "NOTIFYING", "--rate", fmt.Sprint(rate), "--api", main.URL},
			func(string) string { return "" }, io.Discard, io.Discard)))
	})
	waitCond(t, time.Minute, "a quarter replayed", func() bool { return prs-failedAtNotifying() >= prs/4 })
	cancel()
	wg.Wait()
	if first.Load() != exitFailed {
		t.Fatalf("interrupted bulk retry: exit %d, want 1", first.Load())
	}
	left := failedAtNotifying()
	if left == 0 || left == prs {
		t.Fatalf("after the interrupt %d sagas are still failed: the interrupt came too late to test a rerun", left)
	}

	code, out, errOut = runCLI(t, "retry", "--all", "--step", "NOTIFYING", "--rate", fmt.Sprint(rate), "--api", main.URL, "--json")
	var second client.BulkReport
	if code != exitOK || json.Unmarshal([]byte(out), &second) != nil {
		t.Fatalf("second bulk retry: exit %d\n%s%s", code, out, errOut)
	}
	if second.Matched != left || second.Replayed != left || second.Refused != 0 || second.Errors != 0 {
		t.Fatalf("second bulk retry: %+v, want the %d sagas left, each replayed", second, left)
	}

	waitCond(t, 2*time.Minute, "every saga MERGED", func() bool {
		for _, s := range allSagas(t, c) {
			if s.State != contracts.StateMerged {
				return false
			}
		}
		return true
	})
	var retries []time.Time
	for i := 1; i <= prs; i++ {
		retries = append(retries, retriedOnce(t, c, contracts.PRID("acme/widgets", i)))
	}
	slices.SortFunc(retries, func(a, b time.Time) int { return a.Compare(b) })
	for i := range retries {
		j := i
		for j < len(retries) && retries[j].Sub(retries[i]) < time.Second {
			j++
		}
		if j-i > rate+1 {
			t.Fatalf("%d retries within one second from %v, want at most %d (--rate %d)", j-i, retries[i], rate+1, rate)
		}
	}
}

// allSagas lists every saga through the API.
func allSagas(t *testing.T, c *client.Client) []client.Saga {
	t.Helper()
	var out []client.Saga
	cursor := ""
	for {
		page, err := c.List(context.Background(), "", "", cursor, 500)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Sagas...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// startNotifierDown starts a stack with a bare repository acme/widgets
// holding branches pr/1…pr/<branches> (one file each, on top of main) and
// a notifier in a stack of its own whose every attempt-1 delivery fails,
// so each saga that reaches it gives up at NOTIFYING; the replays
// (attempt 2) go through. (The fault point is also passed on the last
// delivery, where the runner gives up: failing there too would retry
// forever.)
func startNotifierDown(t *testing.T, branches int) (*stack.Stack, *gittest.Repo) {
	t.Helper()
	cfg := testConfig(t)
	cfg.MaxDeliver = 2
	now := time.Now()
	commits := []gittest.Commit{{Name: "initial", Branch: "main", Message: "initial\n", At: now}}
	for i := 1; i <= branches; i++ {
		commits = append(commits, gittest.Commit{Name: fmt.Sprint(i), Branch: fmt.Sprintf("pr/%d", i), Parents: []string{"initial"},
			Message: fmt.Sprintf("change %d\n", i), At: now, Files: map[string]string{fmt.Sprintf("f%d.txt", i): "x\n"}})
	}
	repo := gittest.NewBare(t, cfg.ReposDir, "acme/widgets", commits...)
	st := startApart(t, cfg, "notifier", failFirstDeliveries(contracts.TypeMerged, "", cfg.MaxDeliver, "injected: the webhook receiver is down"))
	return st, repo
}

// failFirstDeliveries is a fault hook failing the side effect of attempt
// 1's events of type typ (those about subject only, when it is not empty)
// with why on every delivery but the last of maxDeliver. It is passed on
// the last, where the runner gives up and reports step_failed: failing
// there too would retry forever.
func failFirstDeliveries(typ, subject string, maxDeliver int, why string) func(string, contracts.Envelope) error {
	var calls sync.Map
	return func(point string, env contracts.Envelope) error {
		if point != runner.FaultAfterEffect || env.Event.Type() != typ || env.Meta.Attempt != 1 || (subject != "" && env.Event.Subject() != subject) {
			return nil
		}
		n, _ := calls.LoadOrStore(env.Event.ID(), new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) < int32(maxDeliver) {
			return errors.New(why)
		}
		return nil
	}
}

// startApart starts every service but svc in one stack, and svc in a
// stack of its own sharing the NATS server, without HTTP and with fault,
// so that the hook sees only svc's deliveries. It returns the first.
func startApart(t *testing.T, cfg config.Config, svc string, fault func(string, contracts.Envelope) error) *stack.Stack {
	t.Helper()
	others := slices.DeleteFunc([]string{"validator", "merger", "notifier", "indexer", "ledger"}, func(s string) bool { return s == svc })
	st := startWith(t, stack.Options{Config: cfg, Services: others})
	acfg := cfg
	acfg.NATSURL = st.NATS.Addr()
	startWith(t, stack.Options{Config: acfg, Services: []string{svc}, NoHTTP: true, Fault: fault})
	return st
}

// retriedOnce fails the test unless pr's saga left MERGE_FAILED exactly
// once and is at attempt 2, and returns when it left.
func retriedOnce(t *testing.T, c *client.Client, pr string) time.Time {
	t.Helper()
	s, err := c.Saga(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	var retries []time.Time
	for _, tr := range s.Transitions {
		if tr.From == contracts.StateMergeFailed {
			retries = append(retries, tr.At)
		}
	}
	if len(retries) != 1 || s.Attempts != 2 {
		t.Fatalf("%s was retried %d times (attempts %d), want exactly once", pr, len(retries), s.Attempts)
	}
	return retries[0]
}
