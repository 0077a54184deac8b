package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/step"
)

// TestConflictWithoutCommonHistory: a PR branch with no history in common
// with the target (a root commit of its own) is refused with a conflict
// whose reason says why in a sentence, and names no paths — there are
// none to name.
func TestConflictWithoutCommonHistory(t *testing.T) {
	g := newGitRepo(t)
	im := &importer{}
	im.commit("main", "", map[string]string{"README": "readme\n"})
	im.commit("orphan", "", map[string]string{"other.txt": "unrelated\n"})
	g.fastImport(im)
	if a, b := g.run("", "rev-list", "--max-parents=0", "main"), g.run("", "rev-list", "--max-parents=0", "orphan"); a == b {
		t.Fatalf("main and orphan share their root %s", a)
	}

	ns, b := natstest.Start(t, busConfig)
	db := startMerger(t, ns, busConfig, g.root, service.Options{})
	validated(t, b, 9, "orphan", g.rev("orphan"), contracts.StrategyMerge, step.NewID())
	deadline := time.Now().Add(wait)
	var failed []contracts.StepFailed
	for len(failed) == 0 && time.Now().Before(deadline) {
		_, failed = outcomes(t, b) // waits for a quiet second each time
	}
	drained(t, db)
	if len(failed) != 1 {
		t.Fatalf("step_failed events: %+v; want one", failed)
	}
	f := failed[0]
	want := "orphan cannot be merged into main: the PR head and the target branch have no common history"
	if f.Code != contracts.CodeConflict || f.Reason != want || len(f.Conflicts) != 0 {
		t.Errorf("step_failed = code %s, reason %q, conflicts %q; want conflict, %q, none", f.Code, f.Reason, f.Conflicts, want)
	}
	if strings.Contains(f.Reason, "  ") {
		t.Errorf("reason %q has an empty list in it", f.Reason)
	}
}
