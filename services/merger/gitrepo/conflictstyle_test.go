package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
)

// TestConflictStyleDiff3NeverWrong: with merge.conflictStyle diff3 or
// zdiff3 in the repository's config, git leaves a conflict whose two sides
// read the same unresolved. Random edits from a small alphabet of lines
// (so that the sides often write the same lines) on both sides, merged by
// Merge and by git merge-tree: a clean merge is git's tree, never a clean
// merge where git conflicts; and the default style's merge would have
// merged some of git's conflicts (the case this test is about).
func TestConflictStyleDiff3NeverWrong(t *testing.T) {
	for _, style := range []string{"diff3", "zdiff3"} {
		t.Run(style, func(t *testing.T) {
			const n = 200
			rnd := rand.New(rand.NewPCG(20251201, 3))
			f := newFixture(t)
			f.git("", "config", "merge.conflictStyle", style)
			// Three short texts over an alphabet of two to five lines: the
			// sides often write the same lines over different base lines.
			text := func(k, a int) string {
				var b strings.Builder
				for range k {
					fmt.Fprintf(&b, "x%d\n", rnd.IntN(a))
				}
				return b.String()
			}
			// Half the cases are drawn until the two styles' merges differ.
			var scs []scenario
			for i := range n {
				var b, o, th string
				for tries := 0; tries < 10000; tries++ {
					a := 2 + rnd.IntN(4)
					b, o, th = text(1+rnd.IntN(6), a), text(1+rnd.IntN(6), a), text(1+rnd.IntN(6), a)
					_, whyDefault := engine.MergeLines(b, o, th, engine.LineStyleText)
					_, whyDiff3 := engine.MergeLines(b, o, th, engine.LineStyleDiff3)
					if i%2 == 1 || whyDefault == "" && whyDiff3 != "" {
						break
					}
				}
				scs = append(scs, scenario{name: fmt.Sprintf("%s %d", style, i),
					base:   map[string]file{"f": reg(b)},
					ours:   map[string]file{"f": reg(o), "o": reg("o\n")},
					theirs: map[string]file{"f": reg(th), "t": reg("t\n")}})
			}
			var defaultWouldMerge int
			c := runTally(t, f, scs, func(i int, o outcome) {
				if o.tree == "" && !o.gitClean { // a conflict for both
					if _, why := engine.MergeLines(scs[i].base["f"].content, scs[i].ours["f"].content, scs[i].theirs["f"].content, engine.LineStyleText); why == "" {
						defaultWouldMerge++
						if !strings.Contains(o.conflict.Reason, "conflictStyle") {
							t.Errorf("%s: refusal %q does not name the setting", scs[i].name, o.conflict.Reason)
						}
					}
				}
			})
			same, refused, both := c.same, c.refused, c.both
			t.Logf("%d merges: %d as git, %d refused where git merges, %d conflicts for both (%d of them merged by the default style)", n, same, refused, both, defaultWouldMerge)
			if defaultWouldMerge == 0 {
				t.Errorf("no case where %s changes git's outcome: the test proves nothing", style)
			}
			if refused > n/10 {
				t.Errorf("%d of %d refused where git merges", refused, n)
			}
		})
	}
}
