package gitobj

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// BenchmarkDeflateTree is a loose object's compression (deflate: header,
// zlib at best speed, the check of the hash) of a W2 root tree of 50 and
// 500 entries, the tree each W2 merge writes.
//
//	go test ./gitrepo/gitobj -run '^$' -bench BenchmarkDeflateTree -benchtime 2000x
func BenchmarkDeflateTree(b *testing.B) {
	for _, n := range []int{50, 500} {
		var tree bytes.Buffer
		for i := range n {
			fmt.Fprintf(&tree, "100644 f_%d.txt\x00", i)
			h := sha1.Sum([]byte(strconv.Itoa(i)))
			tree.Write(h[:])
		}
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.TreeObject)
		_, _ = o.Write(tree.Bytes())
		b.Run("entries="+strconv.Itoa(n), func(b *testing.B) {
			var size int
			for b.Loop() {
				z, err := deflate(o)
				if err != nil {
					b.Fatal(err)
				}
				size = z.out.Len()
				z.release()
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
