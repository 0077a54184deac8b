package validator_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/services/validator"
)

// heads is a fake validator.Heads: every read answers err.
type heads struct{ err error }

func (h heads) Head(repo, branch string) (string, error) { return "", h.err }

// A branch head that cannot be read for a reason other than its absence is
// transient: the handler returns the error (the runner retries the event)
// and no commit — no answer, no lock.
func TestOnMergeRequestedRetriesUnreadableHeads(t *testing.T) {
	disk := errors.New("disk on fire")
	v := &validator.Validator{Heads: heads{disk}, Required: []string{"ci"}, Now: time.Now}
	req := contracts.Request{
		PRID: "acme/widgets#1", Repo: "acme/widgets", PRNumber: 1, SourceBranch: "feature/x", TargetBranch: "main",
		HeadSHA: strings.Repeat("ab", 20), Strategy: "merge", Title: "PR", RequestedBy: "alice",
	}
	e, err := contracts.NewRequested("run1", "https://forge.example/test", time.Now(), req, "")
	if err != nil {
		t.Fatal(err)
	}
	commit, err := v.OnMergeRequested(context.Background(), contractstest.Open(t, e), slog.New(slog.DiscardHandler))
	if !errors.Is(err, disk) || commit != nil {
		t.Fatalf("OnMergeRequested with unreadable heads = commit %v, %v; want no commit and an error wrapping %v", commit != nil, err, disk)
	}
}
