package gitrepo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// benchGit runs git for a benchmark's set-up with stdin as its input and
// home as HOME (no user or system config read), failing b on an error. It
// returns the output, trimmed.
func benchGit(b *testing.B, home, stdin string, args ...string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// widgetsImport makes acme/widgets a new bare repository under dir and
// begins its fast-import stream in s: main's first commit (mark 1),
// holding a README. It returns the repository's git directory.
func widgetsImport(b *testing.B, dir string, s *strings.Builder) string {
	b.Helper()
	gitDir := filepath.Join(dir, "acme", "widgets.git")
	benchGit(b, dir, "", "init", "-q", "--bare", "-b", "main", gitDir)
	s.WriteString("commit refs/heads/main\nmark :1\ncommitter C <c@example.com> 1700000000 +0000\ndata 7\ninitial\n")
	fastImportFile(s, "README.md", "# widgets\n")
	return gitDir
}

// fastImportFile writes a fast-import command setting file name to
// content (a regular file, inline data).
func fastImportFile(s *strings.Builder, name, content string) {
	fmt.Fprintf(s, "M 100644 inline %s\ndata %d\n%s\n", name, len(content), content)
}

// openBenchRepo opens acme/widgets among the repositories under root.
func openBenchRepo(b *testing.B, root string, opts Options) *Repo {
	b.Helper()
	repos, err := NewReposWithOptions(root, opts)
	if err != nil {
		b.Fatal(err)
	}
	repo, err := repos.Open(testRepo)
	if err != nil {
		b.Fatal(err)
	}
	return repo
}

// mergeAnew is one iteration of a merge benchmark, called with b's timer
// stopped: it moves r's main back to main, makes req a new merge (commit
// time i seconds past a fixed instant) of a PR never merged, and times the
// merge alone.
func mergeAnew(b *testing.B, r *Repo, main string, req MergeRequest, i int) {
	b.Helper()
	if err := os.WriteFile(gitobj.LoosePath(r.dir, "main"), []byte(main+"\n"), 0o666); err != nil {
		b.Fatal(err)
	}
	req.When = time.Date(2025, 6, 1, 0, 0, i, 0, time.UTC) // a new merge commit each time
	req.Journal = newMemJournal()                          // as for a PR never merged
	b.StartTimer()
	res, err := r.Merge(context.Background(), req)
	if err != nil || res.AlreadyMerged {
		b.Fatalf("Merge = %+v, %v", res, err)
	}
}
