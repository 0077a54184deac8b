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
	c, pos, asJSON, code := clientFlags("retry", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&o.DryRun, "dry-run", false, "show the event that would be replayed; change nothing")
		fs.BoolVar(&o.Force, "force", false, "retry a failure its step marked not retryable")
		fs.StringVar(&o.IdempotencyKey, "key", "", "Idempotency-Key: a repeated call with the same key gets the first answer")
		fs.DurationVar(&wait, "wait", 0, "wait up to this long for the saga to end (MERGED or MERGE_FAILED)")
	})
	if code >= 0 {
		return code
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
	if s.State != string(contracts.StateMerged) {
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
