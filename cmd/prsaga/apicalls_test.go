package main

import (
	"context"
	"testing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// The two API calls nearly every end-to-end test opens with; a refusal of
// either stops the test, since nothing after it could mean anything.

// setCI records head's "ci" status (success or failure) in the validator.
func setCI(t *testing.T, c *client.Client, repo, head, state string) {
	t.Helper()
	if err := c.PostStatus(context.Background(), repo, head, "ci", state); err != nil {
		t.Fatalf("post status %s for %s@%s: %v", state, repo, head, err)
	}
}

// mustMerge asks for r's merge and returns what the API accepted.
func mustMerge(t *testing.T, c *client.Client, r contracts.Request) client.Accepted {
	t.Helper()
	acc, err := c.Merge(context.Background(), r)
	if err != nil {
		t.Fatalf("merge request for %s: %v", r.PRID, err)
	}
	return acc
}
