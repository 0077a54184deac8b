package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// cmdRetry asks the ledger to retry a failed saga: it replays the failed
// step's trigger event (design §4). Exit 0 when the retry was sent (and,
// with --wait, the saga then MERGED), 1 when refused, 3 on a wait timeout.
func cmdRetry(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var o client.RetryOptions
	var wait time.Duration
	var all bool
	var bulk client.BulkRetry
	var since string
	c, pos, asJSON, code := clientFlags("retry", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&o.DryRun, "dry-run", false, "show the event that would be replayed (with --all: list what would be replayed and why); change nothing")
		fs.BoolVar(&o.Force, "force", false, "retry a failure its step marked not retryable")
		fs.StringVar(&o.IdempotencyKey, "key", "", "Idempotency-Key: a repeated call with the same key gets the first answer")
		fs.DurationVar(&wait, "wait", 0, "wait up to this long for the saga to end (MERGED or MERGE_FAILED)")
		fs.BoolVar(&all, "all", false, "retry every MERGE_FAILED saga the filters select (--step, --repo, --since, --reason, --limit), each once")
		fs.StringVar(&bulk.Step, "step", "", "with --all: only sagas failed at this step (VALIDATING, MERGING, NOTIFYING, INDEXING)")
		fs.StringVar(&bulk.Repo, "repo", "", "with --all: only this repository (owner/name)")
		fs.StringVar(&since, "since", "", "with --all: only sagas failed since this long ago (2h) or this time (RFC 3339)")
		fs.StringVar(&bulk.Reason, "reason", "", "with --all: only sagas whose last error matches this regular expression")
		fs.IntVar(&bulk.Limit, "limit", 0, "with --all: at most this many sagas (0: all, up to 10000)")
		fs.Float64Var(&bulk.Rate, "rate", 0, "with --all: at most this many replays per second (0: no limit)")
	})
	if code >= 0 {
		return code
	}
	if all {
		if len(pos) != 0 || o.IdempotencyKey != "" || wait != 0 {
			fmt.Fprintln(stderr, "usage: prsaga retry --all [--step S] [--repo R] [--since 2h|TIME] [--reason RE] [--limit N] [--rate N] [--dry-run] [--force] (no <pr>, --key or --wait)")
			return exitUsage
		}
		t, err := sinceTime(since, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "prsaga retry: --since: %v\n", err)
			return exitUsage
		}
		bulk.Since, bulk.DryRun, bulk.Force = t, o.DryRun, o.Force
		return retryAll(ctx, c, bulk, asJSON, stdout, stderr)
	}
	pr, ok := onePR("retry", pos, stderr)
	if !ok {
		return exitUsage
	}
	r, err := c.Retry(ctx, pr, o)
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Status == 409 {
		// The API names its parameter (force=true); here it is a flag.
		fmt.Fprintf(stderr, "prsaga retry: %s cannot be retried: %s\n", pr, strings.ReplaceAll(ae.Message, "retry with force=true", "run: prsaga retry "+shellQuote(pr)+" --force"))
		return exitFailed
	}
	if err != nil {
		return apiFailed(stderr, "retry", err)
	}
	switch {
	case asJSON:
		printJSON(stdout, r)
	case r.DryRun:
		fmt.Fprintf(stdout, "dry run: %s would go back to %s as attempt %d, replaying %s %s as a new event:\n",
			pr, r.Step, r.Attempt, r.EventType, r.ReplayOf)
		printJSON(stdout, r.Event)
	default:
		fmt.Fprintf(stdout, "retry of %s sent by %s: %s attempt %d, replaying %s %s as event %s\n",
			pr, r.Actor, r.Step, r.Attempt, r.EventType, r.ReplayOf, r.EventID)
	}
	if wait <= 0 || r.DryRun {
		return exitOK
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, err := waitAttempt(wctx, c, pr, r.Attempt)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga retry: %v\n", err)
		return exitTimeout
	}
	if !asJSON {
		printSaga(stdout, s, false, retryHint(ctx, c, s))
	}
	if s.State != contracts.StateMerged {
		return exitFailed
	}
	return exitOK
}

// waitAttempt polls until the saga is terminal at (at least) attempt.
func waitAttempt(ctx context.Context, c *client.Client, pr string, attempt int) (client.Saga, error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		s, err := c.Saga(ctx, pr)
		if err == nil && s.Terminal() && s.Attempts >= attempt {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("waiting for %s: %w (state %s)", pr, ctx.Err(), s.State)
		case <-t.C:
		}
	}
}
