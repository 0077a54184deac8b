package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// BenchmarkLineMergeWorst merges files at the size limit of the line
// merge (maxLineMergeDiff changed lines between base and a side) in shapes
// that are slow for a histogram diff: every line repeated up to 64 times,
// in an order the side scrambles, so that each match kept is short and
// the regions left and right of it shrink slowly. The figure bounds what
// one merge can cost (filemerge.go).
func BenchmarkLineMergeWorst(b *testing.B) {
	n := maxLineMergeDiff / 2
	gen := func(order func(i int) int) string {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "line %d\n", order(i))
		}
		return sb.String()
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	perm := rnd.Perm(n)
	for _, v := range []struct {
		name         string
		base, theirs string
	}{
		{"repeated-reversed", gen(func(i int) int { return i % (n / 64) }), gen(func(i int) int { return (n - 1 - i) % (n / 64) })},
		{"repeated-shuffled", gen(func(i int) int { return i % (n / 64) }), gen(func(i int) int { return perm[i] % (n / 64) })},
		{"distinct-shuffled", gen(func(i int) int { return i }), gen(func(i int) int { return perm[i] })},
	} {
		ours := "first\n" + v.base
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				MergeLines(v.base, ours, v.theirs, LineStyleText)
				if d := time.Since(start); d > 30*time.Second {
					b.Fatalf("one merge took %s", d)
				}
			}
		})
	}
}
