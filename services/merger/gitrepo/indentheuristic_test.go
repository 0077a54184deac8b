package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
)

// TestMergeIgnoresIndentHeuristic: git's merge aligns without the indent
// heuristic that `git diff` applies by default. Here the heuristic puts
// ours' insertion right after the line theirs changes (a conflict), while
// plain compaction puts it one line further down (clean): git merges it,
// and so must mergeLines, to git's text.
func TestMergeIgnoresIndentHeuristic(t *testing.T) {
	base := "\t\treturn err\n\t}\n}\n\n\n\t}\n\treturn nil\n"
	ours := "\t\treturn err\n\t}\n}\n\n\n\t}\n\t\treturn err\n\treturn nil\n\t}\n\t\treturn err\n\t}\n\treturn nil\n"
	theirs := "\t\treturn err\n\t}\n}\n\nX\n\t}\n\treturn nil\n"
	f := newFixture(t)
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(pa, []byte(base), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(ours), 0o666); err != nil {
		t.Fatal(err)
	}
	withHeuristic, _ := f.gitErr(dir, "", "diff", "--no-index", "--histogram", "--indent-heuristic", "-U0", "a", "b")
	without, _ := f.gitErr(dir, "", "diff", "--no-index", "--histogram", "--no-indent-heuristic", "-U0", "a", "b")
	if !strings.Contains(withHeuristic, "@@ -5,0 ") || !strings.Contains(without, "@@ -6,0 ") {
		t.Fatalf("the case no longer tells the two alignments apart:\n%s\n%s", withHeuristic, without)
	}
	shas := f.build(
		commitSpec{ref: "base", files: map[string]file{"f": reg(base)}},
		commitSpec{ref: "ours", parents: []string{"base"}, files: map[string]file{"f": reg(ours)}},
		commitSpec{ref: "theirs", parents: []string{"base"}, files: map[string]file{"f": reg(theirs)}})
	tree, clean := f.mergeTree(shas["ours"], shas["theirs"])
	if !clean {
		t.Fatal("git merge-tree conflicts: git's merge now uses the indent heuristic")
	}
	merged, why := engine.MergeLines(base, ours, theirs, engine.LineStyleText)
	if why != "" {
		t.Fatalf("mergeLines refused: %s", why)
	}
	if got, want := plumbing.ComputeHash(plumbing.BlobObject, []byte(merged)).String(), f.rev(tree+":f"); got != want {
		t.Errorf("merged %q, not git's", merged)
	}
}
