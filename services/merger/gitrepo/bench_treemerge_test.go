package gitrepo

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/cputime"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// BenchmarkTreeMergeWideRoot is the in-memory part of
// BenchmarkMergeWideRoot's merge: the tree merge and the changed paths of
// the result against the target, with warm caches and no file written —
// what grows with the root tree, without the file-system syscalls whose
// cost on a shared machine hides it.
//
//	go test ./gitrepo -run '^$' -bench BenchmarkTreeMergeWideRoot -benchtime 2000x
func BenchmarkTreeMergeWideRoot(b *testing.B) {
	const prs = 256
	eachWideRoot(b, prs, func(root int, main string, repo *Repo) {
		done := repo.store.Session()
		target, err := repo.store.Commit(plumbing.NewHash(main))
		if err != nil {
			b.Fatal(err)
		}
		first, err := repo.store.Commit(target.ParentHashes[0])
		if err != nil {
			b.Fatal(err)
		}
		heads := make([]plumbing.Hash, prs)
		for k := range heads {
			h, err := gitobj.ReadRef(repo.dir, fmt.Sprintf("pr/%d", k))
			if err != nil {
				b.Fatal(err)
			}
			c, err := repo.store.Commit(h)
			if err != nil {
				b.Fatal(err)
			}
			heads[k] = c.TreeHash
		}
		b.Run(fmt.Sprintf("root=%d", root), func(b *testing.B) {
			defer cputime.PerOp(b)()
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				e := repo.engine()
				tree, objs, err := e.MergeTrees(ctx, first.TreeHash, target.TreeHash, heads[i%prs], target.TreeHash)
				if err != nil || len(objs) != 1 {
					b.Fatalf("MergeTrees = %d objects, %v", len(objs), err)
				}
				changed, err := e.ChangedPaths(ctx, target.TreeHash, tree)
				if err != nil || len(changed) != 1 {
					b.Fatalf("ChangedPaths = %v, %v", changed, err)
				}
			}
		})
		done()
	})
}
