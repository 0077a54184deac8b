package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// cmdMergeCheck is the adopters' compatibility check: it replays a
// repository's own two-parent merge commits (parent 1 the target, parent 2
// the PR head) through the merger's engine, in memory, and through `git
// merge-tree --write-tree`, and compares. Nothing of the repository is
// written, not even a file's time: prsaga's new objects stay in memory,
// git works on a scratch copy of the object directory, and no ref is
// touched. git is given the target's .gitattributes in a temporary
// work tree, since that is what prsaga's merge reads (gitrepo/attributes.go).
func cmdMergeCheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga merge-check --git-dir DIR [--all-refs] [--sample N] [--seed S] [--strategy merge] [--git PATH] [--quiet]"
	fs := flag.NewFlagSet("prsaga merge-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gitDir := fs.String("git-dir", "", "the repository to check (a bare repository, or a work tree's .git); only read")
	allRefs := fs.Bool("all-refs", false, "replay the merges reachable from every ref (e.g. a forge's refs/pull/*), not only branches and tags")
	sample := fs.Int("sample", 0, "check N merge commits picked at random (0: all of them)")
	seed := fs.Uint64("seed", 1, "seed of --sample's pick")
	strategy := fs.String("strategy", "merge", "the strategy replayed: merge (a squash has the same tree)")
	gitBin := fs.String("git", "git", "the git command, the reference")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	examples := fs.Int("examples", 3, "example merge commits shown per refusal cause")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseError(err, stderr)
	}
	if len(pos) != 0 || *gitDir == "" || *sample < 0 || *examples < 0 || (*strategy != "merge" && *strategy != "squash") {
		fmt.Fprintln(stderr, use)
		return exitUsage
	}
	dir, err := filepath.Abs(*gitDir)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga merge-check: %v\n", err)
		return exitFailed
	}
	ch, err := gitrepo.OpenChecker(dir)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga merge-check: %v\n", err)
		return exitFailed
	}
	defer ch.Close()
	merges, err := ch.MergeCommits(*allRefs)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga merge-check: %v\n", err)
		return exitFailed
	}
	total := len(merges)
	if *sample > 0 && *sample < len(merges) {
		rnd := rand.New(rand.NewPCG(*seed, 0))
		rnd.Shuffle(len(merges), func(i, j int) { merges[i], merges[j] = merges[j], merges[i] })
		merges = merges[:*sample]
	}
	oracle, err := newGitOracle(*gitBin, dir)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga merge-check: %v\n", err)
		return exitFailed
	}
	defer oracle.close()

	var tally checkTally
	progress := !*quiet && isTerminal(stderr)
	start := time.Now()
	for i, m := range merges {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "\nprsaga merge-check: interrupted")
			return exitFailed
		}
		tally.add(m, ch, oracle)
		if progress {
			fmt.Fprintf(stderr, "\r%d/%d  same %d  both conflict %d  refused %d  different %d  over-merged %d  errors %d ",
				i+1, len(merges), tally.same, tally.bothConflict, tally.refused, len(tally.different), len(tally.overMerged), len(tally.errors))
		}
	}
	if progress {
		fmt.Fprintln(stderr)
	}
	tally.print(stdout, dir, total, len(merges), *sample > 0, *seed, time.Since(start), *examples)
	if len(tally.different) > 0 || len(tally.overMerged) > 0 {
		return exitFailed
	}
	return exitOK
}

// checkTally counts the outcomes.
type checkTally struct {
	same, bothConflict, refused int
	causes                      map[string][]string // refusal cause → merge commits
	different, overMerged       []string
	errors                      []string
}

func (t *checkTally) add(m gitrepo.MergeCommit, ch *gitrepo.Checker, oracle *gitOracle) {
	ours, ourErr := ch.MergeTree(m.Ours, m.Theirs)
	var ce *gitrepo.ConflictError
	if ourErr != nil && !errors.As(ourErr, &ce) {
		t.errors = append(t.errors, fmt.Sprintf("%s: prsaga: %v", m.Hash, ourErr))
		return
	}
	attrs, err := ch.AttributesFiles(m.Ours)
	if err != nil {
		t.errors = append(t.errors, fmt.Sprintf("%s: %v", m.Hash, err))
		return
	}
	gitTree, gitClean, err := oracle.mergeTree(m.Ours, m.Theirs, attrs)
	if err != nil {
		t.errors = append(t.errors, fmt.Sprintf("%s: %v", m.Hash, err))
		return
	}
	switch {
	case ce == nil && gitClean && ours == gitTree:
		t.same++
	case ce == nil && gitClean:
		t.different = append(t.different, fmt.Sprintf("%s: prsaga tree %s, git tree %s", m.Hash, ours, gitTree))
	case ce == nil:
		t.overMerged = append(t.overMerged, fmt.Sprintf("%s: prsaga merged to tree %s, git conflicts", m.Hash, ours))
	case !gitClean:
		t.bothConflict++
	default:
		t.refused++
		if t.causes == nil {
			t.causes = map[string][]string{}
		}
		c := refusalCause(ce)
		t.causes[c] = append(t.causes[c], m.Hash)
	}
}

var numbers = regexp.MustCompile(`[0-9a-f]{40}|[0-9]+`)

// refusalCause is a refusal's reason without its paths and numbers: the
// first conflict's why.
func refusalCause(ce *gitrepo.ConflictError) string {
	r := ce.Reason
	if inner, ok := strings.CutPrefix(r, "criss-cross history: its "); ok {
		_, rest, _ := strings.Cut(inner, "not supported): ")
		return "criss-cross history, merge bases conflict: " + numbers.ReplaceAllString(pathless(rest), "N")
	}
	if len(ce.Paths) > 0 {
		r = pathless(r)
	}
	return numbers.ReplaceAllString(r, "N")
}

// pathless: "p: why; q: why2; and N more" → "why".
func pathless(r string) string {
	first, _, _ := strings.Cut(r, "; ")
	if _, why, ok := strings.Cut(first, ": "); ok {
		return why
	}
	return first
}

func (t *checkTally) print(w io.Writer, dir string, total, checked int, sampled bool, seed uint64, took time.Duration, examples int) {
	how := "all"
	if sampled {
		how = fmt.Sprintf("a sample (seed %d)", seed)
	}
	fmt.Fprintf(w, "merge-check %s: %d two-parent merge commits, %d checked (%s) in %s\n", dir, total, checked, how, took.Round(time.Second))
	fmt.Fprintf(w, "  %-37s %6d\n", "same tree as git", t.same)
	fmt.Fprintf(w, "  %-37s %6d\n", "both conflict", t.bothConflict)
	fmt.Fprintf(w, "  %-37s %6d\n", "refused (git clean, prsaga conflict)", t.refused)
	fmt.Fprintf(w, "  %-37s %6d\n", "different tree", len(t.different))
	fmt.Fprintf(w, "  %-37s %6d\n", "prsaga clean, git conflicts", len(t.overMerged))
	fmt.Fprintf(w, "  %-37s %6d\n", "errors", len(t.errors))
	if clean := t.same + t.refused + len(t.different); clean > 0 {
		fmt.Fprintf(w, "git-clean merges identical: %.2f%% (%d of %d)\n", 100*float64(t.same)/float64(clean), t.same, clean)
	}
	if len(t.causes) > 0 {
		fmt.Fprintln(w, "refusals by cause:")
		causes := make([]string, 0, len(t.causes))
		for c := range t.causes {
			causes = append(causes, c)
		}
		sort.Slice(causes, func(i, j int) bool {
			a, b := len(t.causes[causes[i]]), len(t.causes[causes[j]])
			if a != b {
				return a > b
			}
			return causes[i] < causes[j]
		})
		for _, c := range causes {
			ex := t.causes[c][:min(examples, len(t.causes[c]))]
			fmt.Fprintf(w, "  %5d  %s\n", len(t.causes[c]), c)
			if len(ex) > 0 {
				fmt.Fprintf(w, "         e.g. %s\n", strings.Join(ex, " "))
			}
		}
	}
	for _, group := range []struct {
		name  string
		lines []string
	}{{"different trees", t.different}, {"prsaga clean where git conflicts", t.overMerged}, {"errors", t.errors}} {
		if len(group.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n", group.name)
		for _, l := range group.lines[:min(20, len(group.lines))] {
			fmt.Fprintf(w, "  %s\n", l)
		}
		if len(group.lines) > 20 {
			fmt.Fprintf(w, "  … and %d more\n", len(group.lines)-20)
		}
	}
}

// gitOracle runs `git merge-tree --write-tree` against the repository
// without writing into it: git's object directory is a scratch copy of the
// repository's (copied, not linked or used as an alternate: git "freshens"
// an object it would write that already exists — it touches the pack or
// loose file holding it, wherever that is), its index a temporary file; the
// target's .gitattributes files are put in a temporary work tree, where git
// reads them from; user and system config are ignored, so that only the
// repository's own config counts, as for prsaga.
type gitOracle struct {
	bin, gitDir string
	tmp         string // objects/, work/, index, home/
	env         []string
}

func newGitOracle(bin, gitDir string) (*gitOracle, error) {
	tmp, err := os.MkdirTemp("", "prsaga-merge-check-")
	if err != nil {
		return nil, err
	}
	o := &gitOracle{bin: bin, gitDir: gitDir, tmp: tmp}
	objects := filepath.Join(tmp, "objects")
	alternates, err := copyObjects(filepath.Join(gitDir, "objects"), objects)
	if err != nil {
		o.close()
		return nil, fmt.Errorf("scratch copy of the objects: %w", err)
	}
	home := filepath.Join(tmp, "home")
	o.env = append(os.Environ(),
		"GIT_OBJECT_DIRECTORY="+objects,
		"GIT_INDEX_FILE="+filepath.Join(tmp, "index"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+home, "XDG_CONFIG_HOME="+home,
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
	)
	if len(alternates) > 0 {
		// The repository borrows objects itself: git reads them there (and
		// may freshen them, as it would for any merge in the repository).
		o.env = append(o.env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(alternates, string(os.PathListSeparator)))
	}
	return o, nil
}

// copyObjects copies an object directory's files (packs, loose objects)
// into dst and returns the directories its info/alternates names.
func copyObjects(src, dst string) ([]string, error) {
	var alternates []string
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case rel == filepath.Join("info", "alternates"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					if !filepath.IsAbs(l) {
						l = filepath.Join(src, l)
					}
					alternates = append(alternates, l)
				}
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(p, target)
	})
	return alternates, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return createFrom(dst, 0o644, in)
}

func (o *gitOracle) close() { _ = os.RemoveAll(o.tmp) }

// mergeTree returns git's tree and whether git merged cleanly.
func (o *gitOracle) mergeTree(ours, theirs string, attrs map[string]string) (string, bool, error) {
	work := filepath.Join(o.tmp, "work")
	if err := os.RemoveAll(work); err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", false, err
	}
	for p, text := range attrs {
		name := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return "", false, err
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			return "", false, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// -c safe.directory: the repository may belong to another user; it is
	// only read.
	cmd := exec.CommandContext(ctx, o.bin, "-c", "safe.directory=*", "--git-dir="+o.gitDir, "--work-tree=.",
		"merge-tree", "--write-tree", "--no-messages", ours, theirs)
	cmd.Dir = work
	cmd.Env = o.env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	clean := err == nil
	if err != nil && strings.Contains(errb.String(), "refusing to merge unrelated histories") {
		return "", false, nil // a conflict for git, as for prsaga
	}
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return "", false, fmt.Errorf("git merge-tree %s %s: %v: %s", ours, theirs, err, strings.TrimSpace(errb.String()))
	}
	tree, _, _ := strings.Cut(out.String(), "\n")
	return strings.TrimSpace(tree), clean, nil
}

// isTerminal reports whether w is a terminal (progress is drawn only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
