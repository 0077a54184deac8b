package merger

import (
	"fmt"
	"strings"

	"github.com/prsaga/prsaga/contracts"
)

// conflictReason is the reason of a conflict's step_failed: a sentence
// that names the conflicting paths, or, when the histories themselves
// cannot be merged (no common history, say) and there is no path to name,
// says why.
func conflictReason(r contracts.Request, ce *ConflictError) string {
	if len(ce.Paths) == 0 {
		return fmt.Sprintf("%s cannot be merged into %s: %s", r.SourceBranch, r.TargetBranch, ce.cause())
	}
	s := fmt.Sprintf("merging %s into %s conflicts in %s", r.SourceBranch, r.TargetBranch, strings.Join(capList(ce.Paths), ", "))
	if d := strings.TrimSpace(ce.Detail); d != "" {
		s += " (" + d + ")"
	}
	return s
}

// cause is the conflict's explanation, never empty.
func (e *ConflictError) cause() string {
	if d := strings.TrimSpace(e.Detail); d != "" {
		return d
	}
	return "the merge conflicts, and the merge named neither a path nor a cause"
}
