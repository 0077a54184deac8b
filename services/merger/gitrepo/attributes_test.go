package gitrepo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// workTreeWithAttributes makes a temporary work tree holding the
// .gitattributes files of commit rev: run in it with --work-tree=., git
// reads attributes as prsaga does (the target's tree; see attributes.go).
func (f *fixture) workTreeWithAttributes(rev string) string {
	f.t.Helper()
	work := f.t.TempDir()
	out := f.git("", "ls-tree", "-r", "-z", "--name-only", rev)
	for _, p := range strings.Split(out, "\x00") {
		if p != ".gitattributes" && !strings.HasSuffix(p, "/.gitattributes") {
			continue
		}
		text := f.git("", "cat-file", "blob", rev+":"+p)
		name := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text+"\n"), 0o666); err != nil {
			f.t.Fatal(err)
		}
	}
	return work
}

// gitInWorkTree runs git against the bare repository from work tree dir.
func (f *fixture) gitInWorkTree(work, stdin string, args ...string) (string, error) {
	args = append([]string{"--git-dir=" + f.bare, "--work-tree=."}, args...)
	env := append(f.env, "GIT_INDEX_FILE="+filepath.Join(work, ".prsaga-test-index"))
	saved := f.env
	f.env = env
	defer func() { f.env = saved }()
	return f.gitErr(work, stdin, args...)
}

// mergeAttributes is the lookup of the merge attribute a merge onto
// commit rev reads (engine.MergeAttributes).
func (f *fixture) mergeAttributes(rev string) func(path string) (string, error) {
	f.t.Helper()
	c, err := f.repo.store.Commit(plumbing.NewHash(rev))
	if err != nil {
		f.t.Fatal(err)
	}
	attrs, err := f.repo.engine().MergeAttributes(c.TreeHash)
	if err != nil {
		f.t.Fatal(err)
	}
	return attrs
}

// mergeTreeWithAttributes is the oracle for merges where attributes
// matter: git merge-tree reading ours' .gitattributes.
func (f *fixture) mergeTreeWithAttributes(ours, theirs string) (string, bool) {
	f.t.Helper()
	work := f.workTreeWithAttributes(ours)
	out, err := f.gitInWorkTree(work, "", "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	clean := err == nil
	if err != nil && !strings.Contains(err.Error(), "exit status 1") {
		f.t.Fatal(err)
	}
	tree, _, _ := strings.Cut(out, "\n")
	return tree, clean
}

// TestMergeAttributeMatchesCheckAttr: on random sets of attributes files —
// nested .gitattributes, info/attributes, macros (the built-in binary, ones
// defined at the root, one redefined, one naming another), set, unset,
// reset (!) and valued assignments, globs with *, **, ?, classes, anchored
// and basename patterns, quoted patterns, negative patterns (ignored) — the
// merge attribute of every path is `git check-attr merge`'s.
func TestMergeAttributeMatchesCheckAttr(t *testing.T) {
	patterns := []string{"*", "*.go", "*.txt", "x.go", "/x.go", "a/*.go", "a/**", "**/y.txt", "a/**/z.go", "a/b/",
		"[xy].go", "[!x].txt", "[a-c]/x.go", "?.go", `"q u.txt"`, "!x.go", "*.G[oO]", "b/*", "**/b/**", "a/b/c/*", "*[[:digit:]].txt"}
	assigns := []string{"merge", "-merge", "!merge", "merge=union", "merge=text", "merge=binary", "merge=drv",
		"binary", "-binary", "!binary", "mac", "mac2", "-mac", "text=auto eol=lf", "-text", "diff", "linguist-generated"}
	macros := []string{"[attr]mac merge=union -text", "[attr]mac2 mac eol=crlf", "[attr]mac -merge", "[attr]binary merge=drv2", "[attr]mac2 !merge"}
	paths := []string{"x.go", "y.txt", "1.txt", "q u.txt", "z.Go", "a/x.go", "a/y.txt", "a/b/x.go", "a/b/y.txt",
		"a/b/c/z.go", "a/b/c/d/z.go", "b/x.go", "b/c/y.txt", "c/x.go", "d/e/f/g.txt"}
	dirs := []string{"", "a", "a/b", "b", "a/b/c"}

	f := newFixture(t)
	const n = 60
	rnd := rand.New(rand.NewPCG(20251201, 13))
	line := func(macro bool) string {
		if macro && rnd.IntN(4) == 0 {
			return macros[rnd.IntN(len(macros))]
		}
		l := patterns[rnd.IntN(len(patterns))]
		for range 1 + rnd.IntN(3) {
			l += " " + assigns[rnd.IntN(len(assigns))]
		}
		return l
	}
	var specs []commitSpec
	var infos []string
	for i := range n {
		files := map[string]file{}
		for _, d := range dirs {
			if rnd.IntN(3) == 0 {
				continue
			}
			var ls []string
			for range 1 + rnd.IntN(5) {
				ls = append(ls, line(d == ""))
			}
			files[strings.TrimPrefix(d+"/.gitattributes", "/")] = reg(strings.Join(ls, "\n") + "\n")
		}
		var info []string
		if rnd.IntN(3) == 0 {
			for range 1 + rnd.IntN(3) {
				info = append(info, line(true))
			}
		}
		infos = append(infos, strings.Join(info, "\n"))
		files["keep"] = reg("keep\n")
		specs = append(specs, commitSpec{ref: fmt.Sprintf("attrs%d", i), files: files})
	}
	shas := f.build(specs...)
	infoFile := filepath.Join(f.bare, "info", "attributes")
	if err := os.MkdirAll(filepath.Dir(infoFile), 0o777); err != nil {
		t.Fatal(err)
	}
	var checked, mismatches int
	for i := range n {
		rev := shas[fmt.Sprintf("attrs%d", i)]
		if err := os.WriteFile(infoFile, []byte(infos[i]+"\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		work := f.workTreeWithAttributes(rev)
		out, err := f.gitInWorkTree(work, "", append([]string{"check-attr", "-z", "merge", "--"}, paths...)...)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		fields := strings.Split(out, "\x00")
		for k := 0; k+2 < len(fields); k += 3 {
			want[fields[k]] = fields[k+2]
		}
		attrs := f.mergeAttributes(rev)
		for _, p := range paths {
			got, err := attrs(p)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if got != want[p] {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("set %d, %s: merge attribute %q, git check-attr %q\ninfo/attributes:\n%s\n%s", i, p, got, want[p], infos[i], f.attributesOf(rev))
				}
			}
		}
	}
	t.Logf("%d paths checked against git check-attr, %d mismatches", checked, mismatches)
}

// attributesOf prints a commit's .gitattributes files, for failures.
func (f *fixture) attributesOf(rev string) string {
	var b strings.Builder
	out := f.git("", "ls-tree", "-r", "--name-only", rev)
	names := strings.Split(out, "\n")
	sort.Strings(names)
	for _, p := range names {
		if strings.HasSuffix(p, ".gitattributes") {
			fmt.Fprintf(&b, "%s:\n%s\n", p, f.git("", "cat-file", "blob", rev+":"+p))
		}
	}
	return b.String()
}

// TestMergeHonoursMergeAttribute merges a file both sides changed under
// attribute variants, against git merge-tree reading ours' attributes. The
// common `* text=auto eol=lf` changes nothing (the old code refused every
// file under any .gitattributes); -merge, binary and a macro unsetting merge
// conflict as in git; union merges as git's union; a custom driver is a
// conflict naming it; attributes the PR adds do not apply to its own merge.
func TestMergeHonoursMergeAttribute(t *testing.T) {
	var text string
	for i := range 10 {
		text += fmt.Sprintf("line %d\n", i)
	}
	apartOurs, apartTheirs := "first\n"+text, text+"last\n"
	sameOurs := strings.Replace(text, "line 5\n", "ours 5\n", 1)
	sameTheirs := strings.Replace(text, "line 5\n", "theirs 5\n", 1)
	const (
		clean    = "clean"    // both merge, same tree
		conflict = "conflict" // both conflict
		refused  = "refused"  // git merges, prsaga refuses naming why
	)
	cases := []struct {
		name           string
		attrs          map[string]string // ours' (and base's) attributes files
		prAttrs        map[string]string // added by the PR only
		info           string
		ours, theirs   string
		want, inReason string
	}{
		{name: "no attributes", ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "text=auto eol=lf", attrs: map[string]string{".gitattributes": "* text=auto eol=lf\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "diff and linguist", attrs: map[string]string{".gitattributes": "*.txt diff=txt linguist-generated -text\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "-merge", attrs: map[string]string{".gitattributes": "*.txt -merge\n"}, ours: apartOurs, theirs: apartTheirs, want: conflict},
		{name: "binary macro", attrs: map[string]string{".gitattributes": "d/*.txt binary\n"}, ours: apartOurs, theirs: apartTheirs, want: conflict},
		{name: "merge=binary", attrs: map[string]string{".gitattributes": "*.txt merge=binary\n"}, ours: apartOurs, theirs: apartTheirs, want: conflict},
		{name: "own macro unsets merge", attrs: map[string]string{".gitattributes": "[attr]frozen -merge -diff\n*.txt frozen\n"}, ours: apartOurs, theirs: apartTheirs, want: conflict},
		{name: "nested file overrides the root", attrs: map[string]string{".gitattributes": "*.txt -merge\n", "d/.gitattributes": "*.txt merge=text\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "later line overrides", attrs: map[string]string{".gitattributes": "*.txt -merge\nn.txt merge\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "pattern for other files", attrs: map[string]string{".gitattributes": "*.go -merge\n/n.txt -merge\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "info/attributes overrides the tree", attrs: map[string]string{"d/.gitattributes": "*.txt merge=text\n"}, info: "* -merge\n", ours: apartOurs, theirs: apartTheirs, want: conflict},
		{name: "union, apart", attrs: map[string]string{".gitattributes": "*.txt merge=union\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "union, same line", attrs: map[string]string{".gitattributes": "*.txt merge=union\n"}, ours: sameOurs, theirs: sameTheirs, want: clean},
		{name: "text, same line", ours: sameOurs, theirs: sameTheirs, want: conflict},
		{name: "custom driver", attrs: map[string]string{".gitattributes": "*.txt merge=changelog\n"}, ours: apartOurs, theirs: apartTheirs, want: refused, inReason: `"changelog"`},
		{name: "the PR unsets merge for itself", prAttrs: map[string]string{".gitattributes": "* -merge\n"}, ours: apartOurs, theirs: apartTheirs, want: clean},
		{name: "the PR asks for union for itself", prAttrs: map[string]string{".gitattributes": "* merge=union\n"}, ours: sameOurs, theirs: sameTheirs, want: conflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.info != "" {
				if err := os.MkdirAll(filepath.Join(f.bare, "info"), 0o777); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.bare, "info", "attributes"), []byte(c.info), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			base := map[string]file{"d/n.txt": reg(text), "keep": reg("keep\n")}
			for p, a := range c.attrs {
				base[p] = reg(a)
			}
			theirs := with(base, map[string]file{"d/n.txt": reg(c.theirs)})
			for p, a := range c.prAttrs {
				theirs[p] = reg(a)
			}
			shas := f.build(
				commitSpec{ref: "main", files: base},
				commitSpec{ref: "pr", parents: []string{"main"}, files: theirs},
				commitSpec{ref: "main", parents: []string{"main"}, files: with(base, map[string]file{"d/n.txt": reg(c.ours)})},
			)
			gitTree, gitClean := f.mergeTreeWithAttributes(shas["main"], shas["pr"])
			res, err := f.repo.Merge(context.Background(), request("pr", "main", shas["pr"], StrategyMerge, 1))
			reason, isConflict := IsConflict(err)
			if err != nil && !isConflict {
				t.Fatal(err)
			}
			var tree string
			if err == nil {
				tree = f.treeOf(res.MergeSHA)
			}
			switch c.want {
			case clean:
				if err != nil || !gitClean || tree != gitTree {
					t.Errorf("merged to %q (%v); git: %s clean %v; want both clean, same tree", tree, err, gitTree, gitClean)
				}
			case conflict:
				if err == nil || gitClean {
					t.Errorf("merged to %q (%v); git clean %v; want both to conflict", tree, err, gitClean)
				}
			case refused:
				if err == nil || !gitClean || !strings.Contains(reason, c.inReason) {
					t.Errorf("merged to %q (%v); git clean %v; want a refusal naming %s", tree, err, gitClean, c.inReason)
				}
			}
		})
	}
}

// TestMergeAttributeLimits: git ignores attribute lines of 2048 bytes or
// more (and larger files); so does the reader, at the same boundary; and a
// driver the repository's config defines is run by git even when named
// text or union, so it is refused here.
func TestMergeAttributeLimits(t *testing.T) {
	f := newFixture(t)
	var specs []commitSpec
	for _, n := range []int{2046, 2047, 2048, 2049} {
		l := "n.txt merge=union "
		l += strings.Repeat("x", n-len(l))
		specs = append(specs, commitSpec{ref: fmt.Sprintf("len%d", n), files: map[string]file{".gitattributes": reg(l + "\n")}})
	}
	shas := f.build(specs...)
	for _, n := range []int{2046, 2047, 2048, 2049} {
		rev := shas[fmt.Sprintf("len%d", n)]
		work := f.workTreeWithAttributes(rev)
		out, err := f.gitInWorkTree(work, "", "check-attr", "-z", "merge", "--", "n.txt")
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(out, "\x00")[2]
		attrs := f.mergeAttributes(rev)
		got, err := attrs("n.txt")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("a %d-byte line: merge %q, git check-attr %q", n, got, want)
		}
	}

	f.git("", "config", "merge.union.driver", "cat %A")
	if why, err := f.repo.engine().LineMergeRefusal(plumbing.NewHash(f.rev(shas["len2046"]+"^{tree}")), "n.txt"); err != nil || !strings.Contains(why, `"union"`) {
		t.Errorf("merge=union with merge.union.driver configured: why %q, err %v; want a refusal naming the driver", why, err)
	}
}

// TestUnionMergeNeverWrong: random line edits on both sides of a file
// whose merge attribute is union, merged by Merge and by git merge-tree
// (reading ours' attributes): a clean merge is git's tree; refusals are
// allowed (the union of conflicting regions is only done where certain).
func TestUnionMergeNeverWrong(t *testing.T) {
	const n = 120
	f := newFixture(t)
	var specs []commitSpec
	for i := range n {
		g := &historyGen{rnd: rand.New(rand.NewPCG(20251201, uint64(i))), id: i}
		body := g.newFile("u.txt")
		if body.content == "" {
			body = reg("only line\n")
		}
		base := map[string]file{".gitattributes": reg("*.txt merge=union\n"), "u.txt": reg(body.content)}
		half := g.rnd.IntN(2)
		ours := with(base, map[string]file{"u.txt": reg(g.editFile("u.txt", base["u.txt"], half).content)})
		if g.rnd.IntN(2) == 0 {
			half = 1 - half
		}
		theirs := with(base, map[string]file{"u.txt": reg(g.editFile("u.txt", base["u.txt"], half).content)})
		pre := fmt.Sprintf("u%d-", i)
		specs = append(specs,
			commitSpec{ref: pre + "base", files: base},
			commitSpec{ref: pre + "ours", parents: []string{pre + "base"}, files: ours},
			commitSpec{ref: pre + "theirs", parents: []string{pre + "base"}, files: theirs},
		)
	}
	shas := f.build(specs...)
	var same, refused, both int
	for i := range n {
		pre := fmt.Sprintf("u%d-", i)
		gitTree, gitClean := f.mergeTreeWithAttributes(shas[pre+"ours"], shas[pre+"theirs"])
		merged, _ := f.mergeAgainstGit(fmt.Sprintf("case %d", i), request(pre+"theirs", pre+"ours", shas[pre+"theirs"], StrategyMerge, i+1), gitTree, gitClean)
		switch {
		case merged:
			same++
		case gitClean:
			refused++
		default:
			both++
		}
	}
	t.Logf("%d union merges: %d as git, %d refused where git merges, %d conflicts for both", n, same, refused, both)
	if same < n/2 {
		t.Errorf("only %d of %d union merges merged", same, n)
	}
}
