package merger

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prsaga/prsaga/contracts"
)

// A conflict in 50 long non-ASCII paths makes a reason longer than the
// contract allows: it is cut on a rune boundary, so the step_failed event
// stays valid instead of failing its own validation.
func TestFailureReasonFitsTheContract(t *testing.T) {
	var paths []string
	for i := range 50 {
		paths = append(paths, strings.Repeat("é", 60)+"/"+strings.Repeat("ü", 40)+string(rune('a'+i%26)))
	}
	r := contracts.Request{SourceBranch: "feature/ß", TargetBranch: "main"}
	f, refused := failure(&ConflictError{Paths: paths}, r)
	if !refused {
		t.Fatal("a conflict is a refusal")
	}
	if len(f.Reason) > contracts.MaxReason || !utf8.ValidString(f.Reason) {
		t.Fatalf("reason of %d bytes, valid UTF-8 %v", len(f.Reason), utf8.ValidString(f.Reason))
	}
	if f.Reason != contracts.FitReason(f.Reason) {
		t.Error("the reason is not in its fitted form")
	}
}

// A conflict with no path to name (unrelated histories) reads as a
// sentence with its cause — not "conflicts in  (…)" — and lists no
// conflicts; a conflict in paths lists and names them.
func TestConflictReason(t *testing.T) {
	r := contracts.Request{SourceBranch: "feature", TargetBranch: "main"}
	for _, tc := range []struct {
		name      string
		err       *ConflictError
		reason    string
		conflicts []string
	}{
		{"no common history", &ConflictError{Detail: "the PR head and the target branch have no common history"},
			"feature cannot be merged into main: the PR head and the target branch have no common history", nil},
		{"neither paths nor detail", &ConflictError{},
			"feature cannot be merged into main: the merge conflicts, and the merge named neither a path nor a cause", nil},
		{"paths", &ConflictError{Paths: []string{"a.txt", "b/c.txt"}, Detail: "a.txt: both sides changed lines 3-4; b/c.txt: deleted by one side, changed by the other"},
			"merging feature into main conflicts in a.txt, b/c.txt (a.txt: both sides changed lines 3-4; b/c.txt: deleted by one side, changed by the other)",
			[]string{"a.txt", "b/c.txt"}},
		{"paths without detail", &ConflictError{Paths: []string{"a.txt"}}, "merging feature into main conflicts in a.txt", []string{"a.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, refused := failure(tc.err, r)
			if !refused || f.Code != contracts.CodeConflict {
				t.Fatalf("failure = %+v, refused %v", f, refused)
			}
			if f.Reason != tc.reason {
				t.Errorf("reason = %q\nwant     %q", f.Reason, tc.reason)
			}
			if strings.Join(f.Conflicts, "|") != strings.Join(tc.conflicts, "|") {
				t.Errorf("conflicts = %q, want %q", f.Conflicts, tc.conflicts)
			}
			if msg := tc.err.Error(); strings.HasSuffix(msg, " ") || strings.Contains(msg, "  ") {
				t.Errorf("error %q has an empty list in it", msg)
			}
		})
	}
}
