package gitrepo

import (
	"context"
	"testing"
)

// Over the bound, the graph of the repository opened least recently is
// dropped, the others' kept; a merge into the dropped one rebuilds it and
// finds the same merge base as git.
func TestGraphsBoundedAcrossRepositories(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	f.merge(request("feature", "main", feature, StrategyMerge, 1))
	idle := f.repo

	// A second repository, merged into after the first.
	f.git(f.root, "clone", "-q", "--bare", f.bare, f.root+"/acme/busy.git")
	busy, err := f.repos.Open("acme/busy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := busy.Merge(context.Background(), MergeRequest{
		SourceBranch: "feature", TargetBranch: "main", HeadSHA: feature, Strategy: StrategyMerge,
		PRID: "acme/busy#1", PRNumber: 1, CorrelationID: "c", Title: "t",
		Author: Signature{Name: "A", Email: "a@example.com"}, Committer: Signature{Name: "C", Email: "c@example.com"},
		Journal: newMemJournal(),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.repos.Open("acme/busy"); err != nil { // the most recent use
		t.Fatal(err)
	}
	idleNodes, busyNodes := idle.history.Nodes(), busy.history.Nodes()
	if idleNodes == 0 || busyNodes == 0 {
		t.Fatalf("graphs hold %d and %d commits after a merge each; the test shows nothing", idleNodes, busyNodes)
	}

	f.repos.mu.Lock()
	f.repos.graphLimit = busyNodes
	f.repos.sweepGraphs()
	f.repos.mu.Unlock()
	if n := idle.history.Nodes(); n != 0 {
		t.Errorf("the least recently used graph holds %d commits after the sweep, want it dropped", n)
	}
	if n := busy.history.Nodes(); n != busyNodes {
		t.Errorf("the most recently used graph holds %d commits after the sweep, want %d kept", n, busyNodes)
	}

	// The dropped graph is rebuilt by the next merge into its repository.
	second := f.build(commitSpec{
		ref: "second", parents: []string{main}, files: with(nestedBase, map[string]file{"z.txt": reg("z\n")}),
	})["second"]
	head := f.rev("main")
	wantTree, _ := f.mergeTree(head, second)
	res := f.merge(request("second", "main", second, StrategyMerge, 2))
	if got := f.rev(res.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("merge tree after the graph was dropped = %s, git merge-tree writes %s", got, wantTree)
	}
	if idle.history.Nodes() == 0 {
		t.Error("the merge did not rebuild the dropped graph")
	}
	f.fsck()
}
