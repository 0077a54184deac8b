package gitrepo

import (
	"context"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// A commit one repository read must not make it look present in another
// repository sharing the cache.
func TestCacheKeepsRepositoriesApart(t *testing.T) {
	f := newFixture(t)
	shas := f.build(commitSpec{ref: "main", files: nestedBase})
	other, err := f.repos.Init("acme/other")
	if err != nil {
		t.Fatal(err)
	}
	h := plumbing.NewHash(shas["main"])
	c, err := f.repo.store.Commit(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.engine().ChangedPaths(context.Background(), plumbing.ZeroHash, c.TreeHash); err != nil {
		t.Fatal(err)
	}
	if _, err := other.store.Commit(h); !errors.Is(err, gitobj.ErrObjectMissing) {
		t.Errorf("the other repository's commit(%s): error = %v, want gitobj.ErrObjectMissing", h, err)
	}
	if _, err := other.engine().ChangedPaths(context.Background(), plumbing.ZeroHash, c.TreeHash); err == nil {
		t.Errorf("the other repository read tree %s it does not have", c.TreeHash)
	}
	if f.repos.cache.Bytes() == 0 {
		t.Error("nothing was cached: the test shows nothing")
	}
}

// With a budget too small to keep anything, every object is read again
// from disk, and merges are as git makes them.
func TestMergesWithoutCachedObjects(t *testing.T) {
	f := newFixture(t)
	repos, err := NewReposWithOptions(f.root, Options{CacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.repo, err = repos.Open(testRepo); err != nil {
		t.Fatal(err)
	}
	main, feature := buildNested(f)
	wantTree, _ := f.mergeTree(main, feature)
	res := f.merge(request("feature", "main", feature, StrategyMerge, 42))
	if got := f.rev(res.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("merge tree = %s, git merge-tree writes %s", got, wantTree)
	}
	second := f.build(commitSpec{
		ref: "second", parents: []string{main}, files: with(nestedBase, map[string]file{"z.txt": reg("z\n")}),
	})["second"]
	wantTree, _ = f.mergeTree(res.MergeSHA, second)
	res2 := f.merge(request("second", "main", second, StrategyMerge, 43))
	if got := f.rev(res2.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("second merge tree = %s, git merge-tree writes %s", got, wantTree)
	}
	if used := repos.cache.Bytes(); used != 0 {
		t.Errorf("%d bytes cached with a budget of 1", used)
	}
	f.fsck()
}
