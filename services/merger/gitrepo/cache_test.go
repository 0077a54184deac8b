package gitrepo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func hashOf(i int) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i)))
}

func TestObjectCacheStaysWithinBudgetEvictingLeastRecentlyUsed(t *testing.T) {
	c := newObjectCache(10_000)
	key := func(i int) cacheKey { return cacheKey{repo: 1, kind: kindTree, hash: hashOf(i)} }
	for i := range 1000 {
		c.put(key(i), i, 100)
		if _, ok := c.get(key(0)); !ok { // kept in use: never the least recent
			t.Fatalf("after %d puts, the value used after every put was evicted", i+1)
		}
		if used := c.bytes(); used > 10_000 {
			t.Fatalf("after %d puts, %d bytes kept, budget 10000", i+1, used)
		}
	}
	if _, ok := c.get(key(1)); ok {
		t.Error("the least recently used value survived 1000 puts of 100 bytes into a 10000-byte budget")
	}
	if _, ok := c.get(key(999)); !ok {
		t.Error("the latest value was evicted")
	}
	c.put(key(5000), "big", 10_000/8+1)
	if _, ok := c.get(key(5000)); ok {
		t.Error("a value over an eighth of the budget was kept")
	}
	if _, ok := c.get(key(999)); !ok {
		t.Error("a value too big to keep evicted others")
	}
	c.dropRepo(1)
	if used := c.bytes(); used != 0 {
		t.Errorf("after dropping the only repository, %d bytes accounted", used)
	}
}

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
	c, err := f.repo.commit(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.readTree(c.TreeHash); err != nil {
		t.Fatal(err)
	}
	if _, err := other.commit(h); !errors.Is(err, errObjectMissing) {
		t.Errorf("the other repository's commit(%s): error = %v, want errObjectMissing", h, err)
	}
	if _, err := other.readTree(c.TreeHash); err == nil {
		t.Errorf("the other repository read tree %s it does not have", c.TreeHash)
	}
	if f.repos.cache.bytes() == 0 {
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
	if used := repos.cache.bytes(); used != 0 {
		t.Errorf("%d bytes cached with a budget of 1", used)
	}
	f.fsck()
}
