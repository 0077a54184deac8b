package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// retryHint is the next step for a failed saga, naming the retry that the
// ledger will accept: a failure its step marked not retryable is refused
// without --force, so say --force there (after fixing the cause). It reads
// the run's step_failed event; "" when the saga did not fail.
func retryHint(ctx context.Context, c *client.Client, s client.Saga) string {
	if s.State != contracts.StateMergeFailed {
		return ""
	}
	plain := "prsaga retry " + shellQuote(s.PRID)
	if s.TimedOut {
		return "once the step's cause is fixed: " + plain
	}
	run, err := c.Run(ctx, s.CorrelationID)
	if err != nil {
		return plain + "   (add --force if it is refused as not retryable)"
	}
	for i := len(run.Events) - 1; i >= 0; i-- {
		if run.Events[i].Type != contracts.TypeStepFailed {
			continue
		}
		var ce struct {
			Data struct {
				Code      string `json:"code"`
				Retryable bool   `json:"retryable"`
			} `json:"data"`
		}
		if json.Unmarshal(run.Events[i].Event, &ce) != nil {
			break
		}
		switch {
		case ce.Data.Code == contracts.CodeWebhookFailed:
			return "fix the receiver, then: " + plain
		case ce.Data.Code == contracts.CodeLockLost:
			return "another run of this PR holds its lock: once that run has ended, " + plain
		case !ce.Data.Retryable:
			return "the failure (" + ce.Data.Code + ") is marked not retryable: fix its cause, then: " + plain + " --force"
		}
		return plain
	}
	return plain
}

// shellQuote quotes a PR id for a shell ('#' starts a comment).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
