package contracts_test

import (
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
)

// Fuzz targets for the id parsers: whatever they accept must be safe to
// use as a path, a ref or a message id, and what they refuse must be
// refused with a FieldError whose message stays short (hostile input ends
// up in dead-letter reasons and API answers). Seed corpora are in
// testdata/fuzz/<target>; `make fuzz` runs each target longer.

// maxErrLen bounds a validation error's message: values are truncated in
// messages, so no input can make one longer.
const maxErrLen = 4096

func checkRefusal(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("%s: error %q does not match ErrInvalid", call, err)
	}
	if n := len(err.Error()); n > maxErrLen {
		t.Fatalf("%s: error message is %d bytes long (at most %d)", call, n, maxErrLen)
	}
}

// fuzzValidator fuzzes validate, one of the string validators, from the
// seeds: a refusal must pass checkRefusal, what it accepts must pass
// accepted.
func fuzzValidator(f *testing.F, name string, validate func(string) error, seeds []string, accepted func(t *testing.T, s string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := validate(s); err != nil {
			checkRefusal(t, name, err)
			return
		}
		accepted(t, s)
	})
}

// confined reports whether a repo id, used as the merger and indexer use
// it, names a directory exactly two levels below the repos dir.
func confined(repo string) bool {
	const root = "/srv/repos"
	p := filepath.Join(root, filepath.FromSlash(repo)+".git")
	rel, err := filepath.Rel(root, p)
	if err != nil || rel != filepath.FromSlash(repo)+".git" {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) != 2 {
		return false
	}
	for _, s := range parts {
		if s == "" || s == "." || s == ".." || strings.HasPrefix(s, "..") {
			return false
		}
	}
	return true
}

func FuzzValidateRepo(f *testing.F) {
	seeds := []string{"acme/widgets", "a/b", "../etc", "acme/..", "acme/../../x", "acme/widgets.git",
		"acme//widgets", "/acme/widgets", "acme/widgets/", "acme\\widgets", "a/b/c", ".", "./x", "a/.", "a\x00/b",
		strings.Repeat("a", 101) + "/b", "acme/wid gets", "acme/wïdgets"}
	fuzzValidator(f, "ValidateRepo", contracts.ValidateRepo, seeds, func(t *testing.T, repo string) {
		if !confined(repo) {
			t.Fatalf("ValidateRepo accepts %q, which escapes <repos>/<owner>/<name>.git", repo)
		}
		if strings.ContainsAny(repo, "\x00\\ \t\n%#?") {
			t.Fatalf("ValidateRepo accepts %q with a character unsafe in a path or URL", repo)
		}
	})
}

func FuzzParsePRID(f *testing.F) {
	for _, s := range []string{"acme/widgets#42", "acme/widgets#0", "acme/widgets#-1", "acme/widgets#+1", "acme/widgets#042",
		"acme/widgets#2147483648", "acme/widgets#2147483647", "acme/widgets#1#2", "acme/../x#1", "#1", "acme/widgets#",
		"acme/widgets# 1", "acme/widgets#1 ", "acme/widgets#1e3", "acme/widgets#0x10", "acme/widgets#٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		repo, n, err := contracts.ParsePRID(id)
		if err != nil {
			checkRefusal(t, "ParsePRID", err)
			return
		}
		if n <= 0 || n > contracts.MaxPRNumber {
			t.Fatalf("ParsePRID(%q) = number %d, out of 1..%d", id, n, contracts.MaxPRNumber)
		}
		if err := contracts.ValidateRepo(repo); err != nil {
			t.Fatalf("ParsePRID(%q) = repo %q, which ValidateRepo refuses: %v", id, repo, err)
		}
		// One spelling per PR: the id is canonical, so two spellings can
		// never name two sagas of one PR.
		if got := contracts.PRID(repo, n); got != id {
			t.Fatalf("ParsePRID(%q) = (%q, %d), which PRID spells %q", id, repo, n, got)
		}
	})
}

// gitOracle runs `git check-ref-format --branch` outside any repository.
type gitOracle struct{ bin, dir string }

func newGitOracle(tb testing.TB) gitOracle {
	bin, err := exec.LookPath("git")
	if err != nil {
		tb.Fatalf("git is needed as the branch-name oracle: %v", err)
	}
	return gitOracle{bin: bin, dir: tb.TempDir()}
}

func (g gitOracle) check(name string) (string, bool) {
	cmd := exec.Command(g.bin, "check-ref-format", "--branch", name)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(g.dir), "LC_ALL=C")
	out, err := cmd.Output()
	return strings.TrimSuffix(string(out), "\n"), err == nil
}

func FuzzValidateBranch(f *testing.F) {
	git := newGitOracle(f)
	seeds := []string{"main", "feature/login", "release-1.0", "../../etc/passwd", "a/../b", "a..b", "a/.b",
		"a.lock", "a/b.lock/c", "-rf", "HEAD", "@", "a@{1}", "a b", "a\tb", "a\x00b", "a\x1bb", "a~1", "a^", "a:b",
		"a?", "a*", "a[", "a\\b", "/a", "a/", "a//b", "a.", "refs/heads/x", "ünïcode", "\xff\xfe", "x\u007f"}
	fuzzValidator(f, "ValidateBranch", func(s string) error { return contracts.ValidateBranch("branch", s) }, seeds, func(t *testing.T, name string) {
		ref := "refs/heads/" + name
		if path.Clean(ref) != ref || strings.Contains(name, "..") {
			t.Fatalf("ValidateBranch accepts %q, whose ref %q is not a clean path under refs/heads", name, ref)
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("ValidateBranch accepts %q with control character %q", name, r)
			}
		}
		// Stricter than git, never laxer: git must accept the name as is.
		out, ok := git.check(name)
		if !ok {
			t.Fatalf("ValidateBranch accepts %q, which git check-ref-format --branch refuses", name)
		}
		if out != name {
			t.Fatalf("git check-ref-format --branch %q printed %q: the accepted name is not taken literally", name, out)
		}
	})
}

func FuzzValidateSHA(f *testing.F) {
	seeds := []string{"abcdef0123456789abcdef0123456789abcdef01", "ABCDEF0123456789ABCDEF0123456789ABCDEF01",
		"abcdef0123456789abcdef0123456789abcdef0", "abcdef0123456789abcdef0123456789abcdef012", "g" + strings.Repeat("0", 39),
		strings.Repeat("0", 64), "HEAD", "main", "", "abcdef0123456789abcdef0123456789abcdef0\x00"}
	fuzzValidator(f, "ValidateSHA", func(s string) error { return contracts.ValidateSHA("head_sha", s) }, seeds, func(t *testing.T, sha string) {
		b, herr := hex.DecodeString(sha)
		if herr != nil || len(b) != 20 || strings.ToLower(sha) != sha {
			t.Fatalf("ValidateSHA accepts %q, which is not a 40-hex lower-case object id", sha)
		}
	})
}

func FuzzValidateEventID(f *testing.F) {
	seeds := []string{"01J9Z3Y6K8QX4T2N5M7P0R1S2V", "0190c4c1-7a4d-7cc4-9d3e-2f1f6b9c0a11", "a", "", "a b", "a\nb",
		"a/b", "a*", "a>", "dlq.validator.x", strings.Repeat("x", 129), "id\x00"}
	fuzzValidator(f, "ValidateEventID", contracts.ValidateEventID, seeds, func(t *testing.T, id string) {
		// Ids become Nats-Msg-Id headers, inbox keys and log fields: no
		// space, control character, wildcard or path separator.
		if len(id) == 0 || len(id) > 128 || strings.ContainsAny(id, " \t\r\n\x00*>/\\%") {
			t.Fatalf("ValidateEventID accepts %q", id)
		}
	})
}
