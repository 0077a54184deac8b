package gitrepo

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// nestedBase, nestedOurs and nestedTheirs change disjoint paths two and
// three directories deep, on both sides.
var (
	nestedBase = map[string]file{
		"README.md":      reg("readme\n"),
		"a/b/c/deep.txt": reg("deep\n"),
		"a/b/mid.txt":    reg("mid\n"),
		"a/top.txt":      reg("top\n"),
		"d/old.txt":      reg("old\n"),
		"e/keep.sh":      reg("#!/bin/sh\n"),
	}
	nestedOurs = with(nestedBase, map[string]file{
		"a/b/c/deep.txt": reg("deep, changed on main\n"),
		"a/new.txt":      reg("new on main\n"),
		"d/old.txt":      {}, // deleted
	})
	nestedTheirs = with(nestedBase, map[string]file{
		"a/b/mid.txt":  reg("mid, changed by the PR\n"),
		"a/b/c/z.txt":  reg("z from the PR\n"),
		"f/g/h.txt":    reg("h from the PR\n"),
		"e/keep.sh":    exe("#!/bin/sh\n"),
		"a/b/link":     link("mid.txt"),
		"README.md":    reg("readme\n"),
		"a/b/c/y.json": reg("{}\n"),
	})
)

// with copies files and applies changes; a zero file deletes the path.
func with(files map[string]file, changes map[string]file) map[string]file {
	out := map[string]file{}
	for p, fl := range files {
		out[p] = fl
	}
	for p, fl := range changes {
		if fl == (file{}) {
			delete(out, p)
		} else {
			out[p] = fl
		}
	}
	return out
}

// buildNested makes main (base + main's change) and feature (base + two PR
// commits); it returns main's and feature's heads.
func buildNested(f *fixture) (main, feature string) {
	f.t.Helper()
	shas := f.build(
		commitSpec{ref: "main", files: nestedBase, msg: "base"},
		commitSpec{ref: "feature", parents: []string{"main"}, files: with(nestedBase, map[string]file{"a/b/mid.txt": reg("wip\n")}), msg: "feat: one"},
		commitSpec{ref: "feature", parents: []string{"feature"}, files: nestedTheirs, msg: "feat: two\n\nbody"},
		commitSpec{ref: "main", parents: []string{"main"}, files: nestedOurs, msg: "main moves on"},
	)
	return shas["main"], shas["feature"]
}

// buildForked makes main, and feature one commit ahead of it (the
// nested layout changed), and returns their shas by branch.
func buildForked(f *fixture) map[string]string {
	f.t.Helper()
	return f.build(
		commitSpec{ref: "main", files: nestedBase},
		commitSpec{ref: "feature", parents: []string{"main"}, files: nestedTheirs},
	)
}

func TestFastForward(t *testing.T) {
	f := newFixture(t)
	shas := buildForked(f)
	res := f.merge(request("feature", "main", shas["feature"], StrategyFastForward, 7))
	want := Result{MergeSHA: shas["feature"], BaseSHA: shas["main"], ChangedPaths: f.diffNames(shas["main"], shas["feature"])}
	if !equalResult(res, want) {
		t.Errorf("Merge = %+v, want %+v", res, want)
	}
	if got := f.rev("main"); got != shas["feature"] {
		t.Errorf("main = %s, want the PR head %s", got, shas["feature"])
	}
	f.fsck()
}

func TestFastForwardRefusedWhenDiverged(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	_, err := f.repo.Merge(context.Background(), request("feature", "main", feature, StrategyFastForward, 7))
	if !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("Merge error = %v, want ErrNotFastForward", err)
	}
	if got := f.rev("main"); got != main {
		t.Errorf("main moved to %s after a refused fast-forward", got)
	}
}

func TestMergeDisjointNestedChanges(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	wantTree, clean := f.mergeTree(main, feature)
	if !clean {
		t.Fatal("git finds the disjoint merge conflicting; the fixture is wrong")
	}
	res := f.merge(request("feature", "main", feature, StrategyMerge, 42))

	if got := f.rev("main"); got != res.MergeSHA {
		t.Errorf("main = %s, want the merge commit %s", got, res.MergeSHA)
	}
	if res.BaseSHA != main || res.AlreadyMerged {
		t.Errorf("BaseSHA, AlreadyMerged = %s, %v; want %s, false", res.BaseSHA, res.AlreadyMerged, main)
	}
	if got := f.rev(res.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("merge tree = %s, git merge-tree writes %s", got, wantTree)
	}
	if got, want := f.git("", "rev-list", "--parents", "-n1", res.MergeSHA), res.MergeSHA+" "+main+" "+feature; got != want {
		t.Errorf("parents: got %q, want %q", got, want)
	}
	wantMsg := "Merge pull request #42 from feature\n\nPR number 42\n\nPrsaga-PR: acme/widgets#42\nPrsaga-Correlation-Id: corr-42\n"
	if got := f.commitMessage(res.MergeSHA); got != wantMsg {
		t.Errorf("message:\n%q\nwant\n%q", got, wantMsg)
	}
	if got, want := f.git("", "log", "-1", "--format=%an <%ae>|%cn <%ce>|%at", res.MergeSHA),
		"Alice Author <alice@example.com>|prsaga <prsaga@example.com>|1748779200"; got != want {
		t.Errorf("signatures: got %q, want %q", got, want)
	}
	if want := f.diffNames(main, res.MergeSHA); !slices.Equal(res.ChangedPaths, want) {
		t.Errorf("ChangedPaths = %q, want %q", res.ChangedPaths, want)
	}
	f.fsck()
}

func TestSquash(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	wantTree, _ := f.mergeTree(main, feature)
	res := f.merge(request("feature", "main", feature, StrategySquash, 42))

	if got := f.rev(res.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("squash tree = %s, git merge-tree writes %s", got, wantTree)
	}
	if got, want := f.git("", "rev-list", "--parents", "-n1", res.MergeSHA), res.MergeSHA+" "+main; got != want {
		t.Errorf("parents: got %q, want %q (one parent: the old target head)", got, want)
	}
	wantMsg := "PR number 42 (#42)\n\n* feat: one\n* feat: two\n\nPrsaga-PR: acme/widgets#42\nPrsaga-Correlation-Id: corr-42\n"
	if got := f.commitMessage(res.MergeSHA); got != wantMsg {
		t.Errorf("message:\n%q\nwant\n%q", got, wantMsg)
	}
	if f.isAncestor(feature, "main") {
		t.Error("the PR head is reachable from main after a squash")
	}
	if want := f.diffNames(main, res.MergeSHA); !slices.Equal(res.ChangedPaths, want) {
		t.Errorf("ChangedPaths = %q, want %q", res.ChangedPaths, want)
	}
	f.fsck()
}

func TestMergeConflictNamesPaths(t *testing.T) {
	f := newFixture(t)
	base := map[string]file{"x.txt": reg("x\n"), "a/y.txt": reg("y\n"), "a/z.txt": reg("z\n")}
	shas := f.build(
		commitSpec{ref: "main", files: base},
		commitSpec{ref: "feature", parents: []string{"main"}, files: with(base, map[string]file{
			"x.txt": reg("x from the PR\n"), "a/y.txt": reg("y from the PR\n"), "a/z.txt": reg("z from the PR\n")})},
		commitSpec{ref: "main", parents: []string{"main"}, files: with(base, map[string]file{
			"x.txt": reg("x on main\n"), "a/y.txt": {}, "a/z.txt": reg("z from the PR\n")})},
	)
	for _, strategy := range []string{StrategyMerge, StrategySquash} {
		_, err := f.repo.Merge(context.Background(), request("feature", "main", shas["feature"], strategy, 3))
		var ce *ConflictError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) {
			t.Fatalf("%s: Merge error = %v, want a *ConflictError", strategy, err)
		}
		if want := []string{"a/y.txt", "x.txt"}; !slices.Equal(ce.Paths, want) {
			t.Errorf("%s: conflict paths = %q, want %q (a/z.txt was changed alike)", strategy, ce.Paths, want)
		}
		if !strings.Contains(ce.Reason, "deleted by the target") || !strings.Contains(ce.Error(), "x.txt") {
			t.Errorf("%s: conflict error %q does not say why", strategy, ce.Error())
		}
		if got := f.rev("main"); got != shas["main"] {
			t.Errorf("%s: main moved to %s despite the conflict", strategy, got)
		}
	}
}

func TestMergeHeadMoved(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	f.build(commitSpec{ref: "feature", parents: []string{"feature"}, files: nestedTheirs, msg: "pushed after validation"})
	for _, strategy := range []string{StrategyMerge, StrategySquash, StrategyFastForward} {
		_, err := f.repo.Merge(context.Background(), request("feature", "main", feature, strategy, 5))
		if !errors.Is(err, ErrHeadMoved) {
			t.Errorf("%s: Merge error = %v, want ErrHeadMoved", strategy, err)
		}
	}
	// A head the repository has never seen.
	if _, err := f.repo.Merge(context.Background(), request("feature", "main", strings.Repeat("ab", 20), StrategyMerge, 5)); !errors.Is(err, ErrHeadMoved) {
		t.Errorf("unknown head: Merge error = %v, want ErrHeadMoved", err)
	}
	if got := f.rev("main"); got != main {
		t.Errorf("main moved to %s", got)
	}
}

func TestMergeIsIdempotent(t *testing.T) {
	for _, strategy := range []string{StrategyMerge, StrategySquash, StrategyFastForward} {
		t.Run(strategy, func(t *testing.T) {
			f := newFixture(t)
			var feature string
			if strategy == StrategyFastForward {
				feature = f.build(
					commitSpec{ref: "main", files: nestedBase},
					commitSpec{ref: "feature", parents: []string{"main"}, files: nestedTheirs},
				)["feature"]
			} else {
				_, feature = buildNested(f)
			}
			req := request("feature", "main", feature, strategy, 42)
			first := f.merge(req)
			req.CorrelationID = "a-redelivery" // a replay is a new run of the step
			second := f.merge(req)
			if !second.AlreadyMerged || second.MergeSHA != first.MergeSHA {
				t.Errorf("second Merge = %+v, want AlreadyMerged with MergeSHA %s", second, first.MergeSHA)
			}
			if got := f.rev("main"); got != first.MergeSHA {
				t.Errorf("main = %s after the second Merge, want %s", got, first.MergeSHA)
			}
			if strategy != StrategyFastForward {
				if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
					t.Errorf("%d commits on main carry the PR's trailer, want 1", n)
				}
				if second.BaseSHA != first.BaseSHA || !slices.Equal(second.ChangedPaths, first.ChangedPaths) {
					t.Errorf("second Merge base/paths = %s %q, want %s %q", second.BaseSHA, second.ChangedPaths, first.BaseSHA, first.ChangedPaths)
				}
			}
			f.fsck()
		})
	}
}

func TestAlreadyMergedFoundDeepInHistory(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	req := request("feature", "main", feature, StrategySquash, 42)
	first := f.merge(req)
	// main moves on; the PR branch is deleted (as forges do after a merge).
	f.build(
		commitSpec{ref: "main", parents: []string{"main"}, files: with(nestedTheirs, map[string]file{"later.txt": reg("1\n")})},
		commitSpec{ref: "main", parents: []string{"main"}, files: with(nestedTheirs, map[string]file{"later.txt": reg("2\n")})},
	)
	f.git("", "update-ref", "-d", "refs/heads/feature")
	head := f.rev("main")
	second := f.merge(req)
	if !second.AlreadyMerged || second.MergeSHA != first.MergeSHA {
		t.Errorf("Merge after main moved on = %+v, want AlreadyMerged with %s", second, first.MergeSHA)
	}
	if got := f.rev("main"); got != head {
		t.Errorf("main moved to %s", got)
	}
}

func TestMergeBranchNotFound(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	for _, tc := range []struct{ source, target string }{{"feature", "nope"}, {"gone", "main"}} {
		_, err := f.repo.Merge(context.Background(), request(tc.source, tc.target, feature, StrategyMerge, 1))
		if !errors.Is(err, ErrBranchNotFound) {
			t.Errorf("Merge %s into %s: error = %v, want ErrBranchNotFound", tc.source, tc.target, err)
		}
	}
}

func TestMergeRejectsInvalidRequests(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	for name, mutate := range map[string]func(*MergeRequest){
		"short sha":        func(r *MergeRequest) { r.HeadSHA = feature[:12] },
		"strategy":         func(r *MergeRequest) { r.Strategy = "rebase" },
		"other repo":       func(r *MergeRequest) { r.PRID = "acme/other#42" },
		"number":           func(r *MergeRequest) { r.PRNumber = 43 },
		"branch escape":    func(r *MergeRequest) { r.TargetBranch = "../../HEAD" },
		"lock branch":      func(r *MergeRequest) { r.TargetBranch = "main.lock" },
		"same branch":      func(r *MergeRequest) { r.SourceBranch = "main" },
		"author":           func(r *MergeRequest) { r.Author.Email = "a>b" },
		"no author":        func(r *MergeRequest) { r.Author = Signature{} },
		"correlation id":   func(r *MergeRequest) { r.CorrelationID = "bad id\nPrsaga-PR: x" },
		"committer header": func(r *MergeRequest) { r.Committer.Name = "x\nparent 0000" },
	} {
		req := request("feature", "main", feature, StrategyMerge, 42)
		mutate(&req)
		if _, err := f.repo.Merge(context.Background(), req); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Merge error = %v, want ErrInvalid", name, err)
		}
	}
}

func TestMergeIntoPackedOnlyNestedBranch(t *testing.T) {
	f := newFixture(t)
	shas := f.build(
		commitSpec{ref: "release/1.0", files: nestedBase},
		commitSpec{ref: "fix", parents: []string{"release/1.0"}, files: nestedTheirs},
		commitSpec{ref: "release/1.0", parents: []string{"release/1.0"}, files: nestedOurs},
	)
	f.git("", "pack-refs", "--all", "--prune")
	if _, err := f.repo.Head("release/1.0"); err != nil {
		t.Fatalf("Head of a packed-only branch: %v", err)
	}
	res := f.merge(request("fix", "release/1.0", shas["fix"], StrategyMerge, 9))
	if got := f.rev("release/1.0"); got != res.MergeSHA {
		t.Errorf("release/1.0 = %s, want %s", got, res.MergeSHA)
	}
	if res.BaseSHA != shas["release/1.0"] {
		t.Errorf("BaseSHA = %s, want the packed value %s", res.BaseSHA, shas["release/1.0"])
	}
	f.fsck()
}

func TestMergeRefusesHistoriesItCannotMerge(t *testing.T) {
	f := newFixture(t)
	// A criss-cross with three merge bases: x and y each merged the
	// three first commits (two bases are merged into a virtual base, as
	// git does; three are not).
	shas := f.build(
		commitSpec{ref: "main", files: map[string]file{"r": reg("r\n")}},
		commitSpec{ref: "x1", parents: []string{"main"}, files: map[string]file{"r": reg("r\n"), "x": reg("1\n")}},
		commitSpec{ref: "y1", parents: []string{"main"}, files: map[string]file{"r": reg("r\n"), "y": reg("1\n")}},
		commitSpec{ref: "z1", parents: []string{"main"}, files: map[string]file{"r": reg("r\n"), "z": reg("1\n")}},
		commitSpec{ref: "x", parents: []string{"x1", "y1", "z1"}, files: map[string]file{"r": reg("r\n"), "x": reg("1\n"), "y": reg("1\n"), "z": reg("1\n")}},
		commitSpec{ref: "y", parents: []string{"y1", "x1", "z1"}, files: map[string]file{"r": reg("r\n"), "x": reg("1\n"), "y": reg("1\n"), "z": reg("1\n"), "w": reg("w\n")}},
		commitSpec{ref: "orphan", files: map[string]file{"o": reg("o\n")}},
	)
	for _, tc := range []struct{ source, target, why string }{
		{"y", "x", "3 merge bases"},
		{"orphan", "main", "no common history"},
	} {
		_, err := f.repo.Merge(context.Background(), request(tc.source, tc.target, shas[tc.source], StrategyMerge, 1))
		var ce *ConflictError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.why) {
			t.Errorf("Merge %s into %s: error = %v, want a conflict about %s", tc.source, tc.target, err, tc.why)
		}
	}
}

func equalResult(a, b Result) bool {
	return a.MergeSHA == b.MergeSHA && a.BaseSHA == b.BaseSHA && a.AlreadyMerged == b.AlreadyMerged &&
		slices.Equal(a.ChangedPaths, b.ChangedPaths)
}

// TestMergeSeesPacksWrittenByOthers: go-git reads the list of packs once;
// objects that other processes pack later (a large push, `git gc`) must
// still be found by the next merge.
func TestMergeSeesPacksWrittenByOthers(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	f.merge(request("feature", "main", feature, StrategyMerge, 1))

	next := f.build(commitSpec{ref: "next", parents: []string{"main"}, files: with(nestedTheirs, map[string]file{"n.txt": reg("n\n")})})
	f.git("", "repack", "-a", "-d", "-q") // everything, loose objects included, into one new pack
	if out := f.git("", "count-objects"); !strings.HasPrefix(out, "0 objects") {
		t.Fatalf("objects left loose after repack: %s", out)
	}
	res := f.merge(request("next", "main", next["next"], StrategyMerge, 2))
	if got := f.rev("main"); got != res.MergeSHA {
		t.Errorf("main = %s, want %s", got, res.MergeSHA)
	}
	f.fsck()
}

// TestRevListMatchesGit: the commits a squash lists are `git rev-list
// base..head`, also when the PR branch merged the target on the way.
func TestRevListMatchesGit(t *testing.T) {
	f := newFixture(t)
	files := func(s string) map[string]file { return map[string]file{"f": reg(s + "\n")} }
	shas := f.build(
		commitSpec{ref: "main", files: files("m1")},
		commitSpec{ref: "main", parents: []string{"main"}, files: files("m2")},
		commitSpec{ref: "feature", parents: []string{"main"}, files: files("f1")},
		commitSpec{ref: "main", parents: []string{"main"}, files: files("m3")},
		commitSpec{ref: "feature", parents: []string{"feature"}, files: files("f2")},
		commitSpec{ref: "main", parents: []string{"main"}, files: files("m4")},
		commitSpec{ref: "feature", parents: []string{"feature", "main"}, files: files("f3")},
		commitSpec{ref: "main", parents: []string{"main"}, files: files("m5")},
		commitSpec{ref: "feature", parents: []string{"feature"}, files: files("f4")},
	)
	for _, tc := range []struct{ head, exclude string }{
		{shas["feature"], f.git("", "merge-base", shas["main"], shas["feature"])},
		{shas["feature"], shas["main"]},
		{shas["main"], shas["feature"]},
		{shas["main"], shas["main"]},
	} {
		want := f.git("", "rev-list", tc.exclude+".."+tc.head)
		commits, err := f.repo.history.RevList(context.Background(), plumbing.NewHash(tc.head), plumbing.NewHash(tc.exclude), 1000)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range commits {
			got = append(got, c.Hash.String())
		}
		if strings.Join(got, "\n") != want {
			t.Errorf("revList(%s..%s) = %q, git rev-list = %q", tc.exclude[:7], tc.head[:7], got, want)
		}
	}
}
