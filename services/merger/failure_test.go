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
