package gittest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Timeout bounds one git command: a hung git fails the test instead of
// hanging it.
const Timeout = 2 * time.Minute

// env is the environment of every git run here: no user or system
// configuration leaks in (GIT_CONFIG_GLOBAL also hides
// $XDG_CONFIG_HOME/git/config), and commits made with `git commit` or
// `commit-tree` have a fixed identity.
func env() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
}

// Need skips the test when git is not installed.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// Run runs git in dir ("" for the current directory; a work tree, or a
// bare repository) and returns its trimmed output; a failure fails the
// test.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return RunInput(t, dir, "", args...)
}

// RunInput is Run with stdin.
func RunInput(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = env()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
