package gitobj

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func hashOf(i int) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i)))
}

func TestObjectCacheStaysWithinBudgetEvictingLeastRecentlyUsed(t *testing.T) {
	c := NewCache(10_000)
	key := func(i int) cacheKey { return cacheKey{repo: 1, kind: kindTree, hash: hashOf(i)} }
	for i := range 1000 {
		c.put(key(i), i, 100)
		if _, ok := c.get(key(0)); !ok { // kept in use: never the least recent
			t.Fatalf("after %d puts, the value used after every put was evicted", i+1)
		}
		if used := c.Bytes(); used > 10_000 {
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
	if used := c.Bytes(); used != 0 {
		t.Errorf("after dropping the only repository, %d bytes accounted", used)
	}
}
