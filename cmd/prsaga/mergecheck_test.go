package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMergeCheckOnRealHistory builds a small repository with the git
// command — a clean merge under `* text=auto eol=lf`, a conflict resolved
// by hand, a criss-cross merge, a rename merged with an edit, an unrelated
// history — and runs `prsaga merge-check` on it. Every outcome lands where
// git says it should, and the repository is not touched: every file's
// path, size, mode, time and content are the same afterwards.
func TestMergeCheckOnRealHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=C", "GIT_COMMITTER_EMAIL=c@example.com")
	tick := 0
	git := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tick++
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		when := fmt.Sprintf("%d +0000", 1700000000+tick*60)
		cmd.Env = append(env, "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when)
		out, err := cmd.CombinedOutput()
		if err != nil && !(len(args) > 0 && args[0] == "merge") {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(tag string, edits map[int]string) string {
		var b strings.Builder
		for i := range 12 {
			if e, ok := edits[i]; ok {
				b.WriteString(e + "\n")
				continue
			}
			fmt.Fprintf(&b, "%s line %d\n", tag, i)
		}
		return b.String()
	}
	commit := func(msg string) {
		git("add", "-A")
		git("commit", "-q", "-m", msg)
	}

	git("init", "-q", "-b", "main")
	write(".gitattributes", "* text=auto eol=lf\n")
	write("a.txt", lines("a", nil))
	write("b.txt", lines("b", nil))
	commit("base")

	// diverge edits file one way on a new branch and another on main.
	diverge := func(branch, file string, onBranch, onMain map[int]string, mainMsg string) {
		tag := strings.TrimSuffix(file, ".txt")
		git("checkout", "-q", "-b", branch)
		write(file, lines(tag, onBranch))
		commit(branch)
		git("checkout", "-q", "main")
		write(file, lines(tag, onMain))
		commit(mainMsg)
	}

	// 1. A clean merge (same).
	diverge("f1", "a.txt", map[int]string{1: "f1"}, map[int]string{10: "main"}, "main 1")
	git("merge", "-q", "--no-ff", "-m", "merge f1", "f1")

	// 2. A conflict resolved by hand (both conflict).
	diverge("f2", "b.txt", map[int]string{5: "f2"}, map[int]string{5: "main"}, "main 2")
	git("merge", "-q", "-m", "merge f2", "f2")
	write("b.txt", lines("b", map[int]string{5: "resolved"}))
	commit("merge f2")

	// 3. A criss-cross: x and y merged each other's first commit; then y
	// is merged into x (two merge bases: same, through the virtual base).
	git("checkout", "-q", "-b", "x")
	write("x.txt", lines("x", nil))
	commit("x1")
	git("checkout", "-q", "-b", "y", "main")
	write("y.txt", lines("y", nil))
	commit("y1")
	git("branch", "y1")
	git("checkout", "-q", "x")
	git("merge", "-q", "--no-ff", "-m", "x merges y1", "y1")
	write("a.txt", lines("a", map[int]string{0: "x", 1: "f1", 10: "main"}))
	commit("x2")
	git("checkout", "-q", "y")
	git("merge", "-q", "--no-ff", "-m", "y merges x1", "x~1^1")
	write("b.txt", lines("b", map[int]string{5: "resolved", 11: "y"}))
	commit("y2")
	git("checkout", "-q", "x")
	git("merge", "-q", "--no-ff", "-m", "merge y", "y")
	if bases := git("merge-base", "--all", "HEAD^1", "HEAD^2"); len(strings.Fields(bases)) != 2 {
		t.Fatalf("merge bases of the criss-cross: %q, want two", bases)
	}
	git("checkout", "-q", "main")
	git("merge", "-q", "--no-ff", "-m", "merge x", "x")

	// 4. A rename with an edit on one side, next to a copy of it, an edit
	// on the other (refused: git pairs one of them by similarity and
	// merges; with two candidates prsaga does not pair).
	git("checkout", "-q", "-b", "ren")
	git("mv", "a.txt", "renamed.txt")
	write("renamed.txt", lines("a", map[int]string{0: "x", 1: "f1", 10: "main", 11: "renamed"}))
	write("copy.txt", lines("a", map[int]string{0: "x", 1: "f1", 10: "main", 11: "copied"}))
	commit("rename a.txt")
	git("checkout", "-q", "main")
	write("a.txt", lines("a", map[int]string{0: "x", 1: "f1", 6: "six", 10: "main"}))
	commit("main 3")
	git("merge", "-q", "--no-ff", "-m", "merge ren", "ren")

	// 5. An unrelated history (both refuse).
	git("checkout", "-q", "--orphan", "other")
	git("rm", "-q", "-rf", ".")
	write("o.txt", "o\n")
	commit("other root")
	git("checkout", "-q", "main")
	git("merge", "-q", "--allow-unrelated-histories", "-m", "merge other", "other")
	git("gc", "-q") // packs, as a real repository has them

	gitDir := filepath.Join(dir, ".git")
	before := snapshot(t, gitDir)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"merge-check", "--git-dir", gitDir}, func(string) string { return "" }, &stdout, &stderr)
	out := stdout.String()
	t.Logf("merge-check:\n%s%s", out, stderr.String())
	if code != exitOK {
		t.Errorf("exit %d, want %d", code, exitOK)
	}
	for _, want := range []string{
		"8 two-parent merge commits, 8 checked",
		"same tree as git                         5", // f1, x and y merging each other, the criss-cross, x into main
		"both conflict                            2", // f2, the unrelated history
		"refused (git clean, prsaga conflict)     1", // the rename
		"different tree                           0",
		"prsaga clean, git conflicts              0",
		"errors                                   0",
	} {
		if !strings.Contains(regexp.MustCompile(` +`).ReplaceAllString(out, " "), regexp.MustCompile(` +`).ReplaceAllString(want, " ")) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(out, "may be renamed to copy.txt") && !strings.Contains(out, "may be renamed to renamed.txt") {
		t.Errorf("the refusal's cause does not name the rename")
	}
	if after := snapshot(t, gitDir); after != before {
		t.Errorf("merge-check changed the repository:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Usage errors.
	for _, args := range [][]string{{"merge-check"}, {"merge-check", "--git-dir", gitDir, "--strategy", "rebase"}, {"merge-check", "--git-dir", gitDir, "extra"}} {
		if code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code := run(context.Background(), []string{"merge-check", "--git-dir", t.TempDir()}, func(string) string { return "" }, &stdout, &stderr); code != exitFailed {
		t.Errorf("not a git directory: exit %d, want %d", code, exitFailed)
	}
}

// snapshot lists every file and directory under dir with its size, mode,
// modification time and content hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %d %v %d %s\n", rel, fi.Size(), fi.Mode(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
