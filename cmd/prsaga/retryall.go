package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
)

// retryAll runs a bulk retry on the ledger (POST /api/v1/retries) and
// follows it: progress on a terminal, a summary at the end. Interrupted
// (Ctrl-C), it cancels the job after the saga in progress; run again, it
// replays nothing twice (each saga's failed attempt has its own
// Idempotency-Key). Exit 0 when every selected saga was replayed or
// skipped, 1 when one was refused or failed, or the run was interrupted.
func retryAll(ctx context.Context, c *client.Client, r client.BulkRetry, asJSON bool, stdout, stderr io.Writer) int {
	j, err := c.StartBulkRetry(ctx, r)
	if err != nil {
		return apiFailed(stderr, "retry", err)
	}
	tty := isTerminal(stderr)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var rep client.BulkReport
	for {
		rep, err = c.BulkRetryStatus(context.WithoutCancel(ctx), j.ID)
		if err != nil {
			return apiFailed(stderr, "retry", err)
		}
		if tty {
			fmt.Fprintf(stderr, "\r%d/%d: %d replayed, %d skipped, %d refused, %d errors ", rep.Done, rep.Matched, rep.Replayed, rep.Skipped, rep.Refused, rep.Errors)
		}
		if rep.Finished {
			break
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			rep, err = c.CancelBulkRetry(cctx, j.ID)
			cancel()
			if err != nil {
				return apiFailed(stderr, "retry", errors.Join(ctx.Err(), err))
			}
			rep.Cancelled = true
		case <-t.C:
			continue
		}
		break
	}
	if tty {
		fmt.Fprintln(stderr)
	}
	if asJSON {
		printJSON(stdout, rep)
	} else {
		printBulk(stdout, j.ID, rep)
	}
	if rep.Cancelled || rep.Refused > 0 || rep.Errors > 0 {
		return exitFailed
	}
	return exitOK
}

func printBulk(w io.Writer, id string, rep client.BulkReport) {
	verb := "replayed"
	if rep.DryRun {
		verb = "would be replayed"
	}
	fmt.Fprintf(w, "bulk retry %s: %d matched, %d %s, %d skipped, %d refused, %d errors", id, rep.Matched, rep.Replayed, verb, rep.Skipped, rep.Refused, rep.Errors)
	if rep.Cancelled {
		fmt.Fprintf(w, " (interrupted after %d)", rep.Done)
	}
	fmt.Fprintln(w)
	for _, it := range rep.Items {
		if it.Outcome == "replayed" {
			continue // the summary counts them; history shows each
		}
		fmt.Fprintf(w, "  %-12s %s %s attempt %d: %s\n", it.Outcome, it.PRID, it.Step, it.Attempt, it.Why)
		if it.Outcome == "would_replay" && it.LastError != "" {
			fmt.Fprintf(w, "               failed with: %s\n", it.LastError)
		}
	}
}

// sinceTime reads --since: a duration back from now, or an RFC 3339 time.
func sinceTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration like 2h nor a time like 2026-12-01T10:00:00Z", s)
	}
	return t, nil
}
