package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/gittest"
)

// TestHistogramDiffMatchesGit holds the alignment (histogram diff, then
// compaction) to `git diff --histogram --no-indent-heuristic` on random
// files drawn from few distinct lines — the case where alignments differ:
// repeated "}", blank lines, "return nil". Every changed line must be the
// one git marks. GITREPO_HISTOGRAM_CASES=N runs more.
func TestHistogramDiffMatchesGit(t *testing.T) {
	gittest.Need(t)
	n := 400
	if v, err := strconv.Atoi(os.Getenv("GITREPO_HISTOGRAM_CASES")); err == nil {
		n = v
	}
	if testing.Short() {
		n = 80
	}
	dir := t.TempDir()
	alphabet := []string{"}\n", "\n", "return nil\n", "if err != nil {\n", "a\n", "b\n", "c\n", "x := 1\n"}
	for i := range n {
		rnd := rand.New(rand.NewPCG(13, uint64(i)))
		k := 2 + rnd.IntN(len(alphabet)-1)
		gen := func(m int) []string {
			var ls []string
			for range m {
				ls = append(ls, alphabet[rnd.IntN(k)])
			}
			return ls
		}
		a := gen(rnd.IntN(30))
		b := append([]string(nil), a...)
		for range 1 + rnd.IntN(4) { // edits of blocks
			at := rnd.IntN(len(b) + 1)
			del := min(rnd.IntN(4), len(b)-at)
			b = append(b[:at], append(gen(rnd.IntN(4)), b[at+del:]...)...)
		}
		at, bt := strings.Join(a, ""), strings.Join(b, "")
		in := newInterner(0)
		ai, bi := in.intern(a), in.intern(b)
		al, ok := diffIDs(context.Background(), ai, bi, len(in.ids))
		if !ok {
			continue
		}
		wantDel, wantIns := gitDiffMarks(t, dir, at, bt, len(a), len(b))
		if fmt.Sprint(al.delA) != fmt.Sprint(wantDel) || fmt.Sprint(al.insB) != fmt.Sprint(wantIns) {
			t.Errorf("case %d: diff of\n%q\n%q\ndeleted %v, git %v\ninserted %v, git %v", i, at, bt, al.delA, wantDel, al.insB, wantIns)
		}
	}
}

// gitDiffMarks runs git's histogram diff of two texts and returns the lines
// it marks deleted and inserted.
func gitDiffMarks(t *testing.T, dir, a, b string, na, nb int) (del, ins []bool) {
	t.Helper()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(pa, []byte(a), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(b), 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-c", "core.quotepath=false", "diff", "--no-index", "--no-color", "--no-ext-diff",
		"--histogram", "--no-indent-heuristic", "-U1", "--", pa, pb)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("git diff: %v", err)
	}
	del, ins = make([]bool, na), make([]bool, nb)
	i, j := 0, 0
	inHunk := false
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "@@ "):
			f := strings.Fields(l)
			i = hunkStart(t, f[1])
			j = hunkStart(t, f[2])
			inHunk = true
		case !inHunk || l == "":
		case l[0] == ' ':
			i, j = i+1, j+1
		case l[0] == '-':
			del[i] = true
			i++
		case l[0] == '+':
			ins[j] = true
			j++
		}
	}
	return del, ins
}

// hunkStart reads "-a,b" or "+c" of a hunk header: the 0-based first line.
func hunkStart(t *testing.T, s string) int {
	s = s[1:]
	count := 1
	if k := strings.IndexByte(s, ','); k >= 0 {
		var err error
		if count, err = strconv.Atoi(s[k+1:]); err != nil {
			t.Fatal(err)
		}
		s = s[:k]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	if count == 0 {
		return n // an empty range sits after line n
	}
	return n - 1
}
