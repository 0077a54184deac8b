package contracts_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
)

// checkInvalid fails the test unless err, the result of call, is a
// validation error that names field: it matches contracts.ErrInvalid, is a
// *contracts.FieldError for that field, and its message starts with the
// field's name.
func checkInvalid(t *testing.T, call string, err error, field string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = nil, want an invalid %s", call, field)
		return
	}
	if !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("%s = %v: errors.Is(err, ErrInvalid) = false, want true", call, err)
	}
	var fe *contracts.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("%s = %v: not a *FieldError", call, err)
		return
	}
	if fe.Field != field {
		t.Errorf("%s = %q: names field %q, want %q", call, err, fe.Field, field)
	}
	if !strings.HasPrefix(err.Error(), field+" ") {
		t.Errorf("%s = %q: does not start with the field name %q", call, err, field)
	}
}

// idCase is one input to a validator and whether it is accepted.
type idCase struct {
	in string
	ok bool
}

// checkValidator runs validate (called name in messages) on every case:
// an accepted input must give nil, a refused one a validation error that
// names field.
func checkValidator(t *testing.T, name string, validate func(string) error, field string, cases []idCase) {
	t.Helper()
	for _, tt := range cases {
		err := validate(tt.in)
		if tt.ok {
			if err != nil {
				t.Errorf("%s(%q) = %v, want nil", name, tt.in, err)
			}
			continue
		}
		checkInvalid(t, fmt.Sprintf("%s(%q)", name, tt.in), err, field)
	}
}

func TestValidateEventID(t *testing.T) {
	checkValidator(t, "ValidateEventID", contracts.ValidateEventID, "id", []idCase{
		{"a", true},
		{"01J9Z3Y6K8QX4T2N5M7P0R1S2V", true},
		{"6f1c2b3a-9d8e-4f7a-b6c5-d4e3f2a1b0c9", true},
		{"dlq.ledger:evt_1-2", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"a b", false},
		{"a/b", false},
		{"a#b", false},
		{"a\nb", false},
		{"ü", false},
		{"a*", false},
		{"a>", false},
	})
}

func TestValidateRepo(t *testing.T) {
	checkValidator(t, "ValidateRepo", contracts.ValidateRepo, "repo", []idCase{
		{"acme/widgets", true},
		{"a/b", true},
		{"Acme-Corp/my_repo.v2", true},
		{"a.b/c.d", true},
		{strings.Repeat("o", 100) + "/" + strings.Repeat("n", 100), true},
		{"", false},
		{"acme", false},
		{"/widgets", false},
		{"acme/", false},
		{"acme/widgets/extra", false},
		{"../widgets", false},
		{"acme/..", false},
		{"acme/a..b", false},
		{"./widgets", false},
		{"acme/.", false},
		{"acme/widgets.git", false},
		{"acme/widgets.lock", false},
		{"acme/wid gets", false},
		{"acme/wid#gets", false},
		{"acme\\widgets", false},
		{"acme/widgéts", false},
		{"acme/widgets\x00", false},
		{strings.Repeat("o", 101) + "/n", false},
		{"o/" + strings.Repeat("n", 101), false},
	})
}

func TestParsePRID(t *testing.T) {
	tests := []struct {
		id       string
		wantRepo string
		wantN    int
		ok       bool
	}{
		{"acme/widgets#42", "acme/widgets", 42, true},
		{"a/b#1", "a/b", 1, true},
		{"acme/widgets#2147483647", "acme/widgets", contracts.MaxPRNumber, true},
		{"acme/widgets#2147483648", "", 0, false},
		{"acme/widgets#99999999999999999999", "", 0, false},
		{"acme/widgets#0", "", 0, false},
		{"acme/widgets#042", "", 0, false},
		{"acme/widgets#-1", "", 0, false},
		{"acme/widgets#+1", "", 0, false},
		{"acme/widgets# 1", "", 0, false},
		{"acme/widgets#1 ", "", 0, false},
		{"acme/widgets#", "", 0, false},
		{"acme/widgets#4#2", "", 0, false},
		{"acme/widgets#0x1f", "", 0, false},
		{"acme/widgets", "", 0, false},
		{"#42", "", 0, false},
		{"acme#42", "", 0, false},
		{"../widgets#42", "", 0, false},
		{"acme/wid gets#42", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		repo, n, err := contracts.ParsePRID(tt.id)
		if !tt.ok {
			checkInvalid(t, fmt.Sprintf("ParsePRID(%q)", tt.id), err, "pr_id")
			continue
		}
		if err != nil || repo != tt.wantRepo || n != tt.wantN {
			t.Errorf("ParsePRID(%q) = %q, %d, %v; want %q, %d, nil", tt.id, repo, n, err, tt.wantRepo, tt.wantN)
		}
		if got := contracts.PRID(repo, n); got != tt.id {
			t.Errorf("PRID(%q, %d) = %q, want %q", repo, n, got, tt.id)
		}
	}
}

// branchNames are tricky branch names. ok is what ValidateBranch answers;
// git is the oracle that ValidateBranch must never be more lenient than.
var branchNames = []idCase{
	{"main", true},
	{"feature/x", true},
	{"feature/x-y_z.1", true},
	{"release/2024.10", true},
	{"a/b/c/d", true},
	{"ü", true},
	{"fix/ümlaut-🙂", true},
	{"a@b", true},
	{"x@", true},
	{"@/x", true},
	{"x/-y", true},
	{"a-", true},
	{"a.b", true},
	{"a/b.c", true},
	{"refs/heads/x", true},
	{"HEAD/a", true},
	{"a/HEAD", true},
	{"head", true},
	{"a{b}", true},
	{"a!b", true},
	{"a#b", true},
	{"a'b", true},
	{"a.lockx", true},
	{"lock", true},
	{strings.Repeat("b", 255), true},

	{"", false},
	{"..", false},
	{".", false},
	{"a..b", false},
	{"a/..", false},
	{"a/.b", false},
	{".a", false},
	{"a/.", false},
	{"x.lock", false},
	{"x.lock/y", false},
	{"a/.lock", false},
	{"a//b", false},
	{"-x", false},
	{"-", false},
	{"@", false},
	{"HEAD", false},
	{"a@{b", false},
	{"@{-1}", false},
	{"x@{", false},
	{"a b", false},
	{" a", false},
	{"a\x01", false},
	{"a\tb", false},
	{"a\nb", false},
	{"a\x7f", false},
	{"feature/", false},
	{"/feature", false},
	{"/", false},
	{"a.", false},
	{"a/b.", false},
	{"~", false},
	{"a~1", false},
	{"^", false},
	{"a^", false},
	{":", false},
	{"a:b", false},
	{"?", false},
	{"a?", false},
	{"*", false},
	{"a*b", false},
	{"[", false},
	{"a[b", false},
	{"\\", false},
	{"a\\b", false},
	{strings.Repeat("b", 256), false}, // stricter than git
	{"a\xff", false},                  // stricter than git: not UTF-8
}

func TestValidateBranch(t *testing.T) {
	checkValidator(t, "ValidateBranch", func(s string) error { return contracts.ValidateBranch("target_branch", s) }, "target_branch", branchNames)
	// A NUL cannot reach git through argv; it must still be refused.
	checkInvalid(t, `ValidateBranch("a\x00b")`, contracts.ValidateBranch("source_branch", "a\x00b"), "source_branch")
}

// TestValidateBranchAgainstGit uses `git check-ref-format --branch` as the
// oracle: ValidateBranch may refuse more than git, never less.
func TestValidateBranchAgainstGit(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed as the branch-name oracle: %v", err)
	}
	// Outside any repository, so that git does not expand "@" or "@{-1}"
	// against a real HEAD.
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "LC_ALL=C")
	stricter := 0
	for _, tt := range branchNames {
		cmd := exec.Command(gitPath, "check-ref-format", "--branch", tt.in)
		cmd.Dir, cmd.Env = dir, env
		out, runErr := cmd.CombinedOutput()
		var exit *exec.ExitError
		if runErr != nil && !errors.As(runErr, &exit) {
			t.Fatalf("run git check-ref-format --branch %q: %v", tt.in, runErr)
		}
		gitOK := runErr == nil
		oursOK := contracts.ValidateBranch("branch", tt.in) == nil
		switch {
		case oursOK && !gitOK:
			t.Errorf("ValidateBranch(%q) accepts a name git rejects: %s", tt.in, strings.TrimSpace(string(out)))
		case !oursOK && gitOK:
			stricter++
			t.Logf("stricter than git (allowed): %q", tt.in)
		case tt.ok && gitOK && strings.TrimSpace(string(out)) != tt.in:
			t.Errorf("git check-ref-format --branch %q printed %q: the oracle rewrote the name", tt.in, out)
		}
	}
	if stricter > 6 {
		t.Errorf("ValidateBranch is stricter than git on %d sample names, want at most 6 (\"@\", length, UTF-8 ...)", stricter)
	}
}

func TestValidateSHA(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef01234567"
	checkValidator(t, "ValidateSHA", func(s string) error { return contracts.ValidateSHA("head_sha", s) }, "head_sha", []idCase{
		{good, true},
		{strings.Repeat("f", 40), true},
		{"", false},
		{good[:39], false},
		{good + "8", false},
		{strings.ToUpper(good), false},
		{"0123456789abcdef0123456789abcdef0123456g", false},
		{"0123456789abcdef0123456789abcdef012345 7", false},
		{strings.Repeat("a", 64), false}, // SHA-256 object names are not in the contract
	})
}

func TestValidateStrategy(t *testing.T) {
	checkValidator(t, "ValidateStrategy", contracts.ValidateStrategy, "strategy", []idCase{
		{contracts.StrategyMerge, true},
		{contracts.StrategySquash, true},
		{contracts.StrategyFastForward, true},
		{"", false},
		{"Merge", false},
		{"rebase", false},
		{"fast_forward", false},
		{"ff", false},
		{" merge", false},
	})
}
