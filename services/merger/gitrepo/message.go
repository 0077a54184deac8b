package gitrepo

import (
	"fmt"
	"strings"
)

// Trailer keys prsaga writes into merge and squash commits, for people and
// tools reading the history. They prove nothing: anyone who can push can
// write them into a commit. What makes a merge idempotent is the merger's
// journal (Journal).
const (
	TrailerPR            = "Prsaga-PR"
	TrailerCorrelationID = "Prsaga-Correlation-Id"
)

// maxSquashSubjects caps the "* subject" lines of a squash message.
const maxSquashSubjects = 100

// mergeMessage is the message of a merge commit:
//
//	Merge pull request #<n> from <source_branch>
//
//	<title>
//
//	Prsaga-PR: <pr_id>
//	Prsaga-Correlation-Id: <id>
func mergeMessage(req MergeRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Merge pull request #%d from %s\n\n", req.PRNumber, req.SourceBranch)
	if t := cleanTitle(req.Title); t != "" {
		b.WriteString(t + "\n\n")
	}
	b.WriteString(trailers(req))
	return b.String()
}

// squashMessage is the message of a squash commit: "<title> (#<n>)", one
// "* <subject>" line per squashed commit (oldest first), the trailers.
func squashMessage(req MergeRequest, subjects []string, more int) string {
	var b strings.Builder
	title := cleanTitle(req.Title)
	if title == "" {
		title = "Merge pull request"
	}
	// Only the first line of a multi-line title makes the subject.
	subject, rest, _ := strings.Cut(title, "\n")
	fmt.Fprintf(&b, "%s (#%d)\n\n", strings.TrimSpace(subject), req.PRNumber)
	if rest = strings.TrimSpace(rest); rest != "" {
		b.WriteString(rest + "\n\n")
	}
	for _, s := range subjects {
		b.WriteString("* " + s + "\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "* … and %d more commits\n", more)
	}
	if len(subjects) > 0 || more > 0 {
		b.WriteString("\n")
	}
	b.WriteString(trailers(req))
	return b.String()
}

// trailers is the final paragraph of every prsaga commit.
func trailers(req MergeRequest) string {
	s := TrailerPR + ": " + req.PRID + "\n"
	if req.CorrelationID != "" {
		s += TrailerCorrelationID + ": " + req.CorrelationID + "\n"
	}
	return s
}

// cleanTitle normalises line endings and trims blank space, so that a title
// can neither merge into the trailer paragraph nor leave empty lines behind.
func cleanTitle(t string) string {
	t = strings.ReplaceAll(t, "\r\n", "\n")
	t = strings.ReplaceAll(t, "\r", "\n")
	return strings.TrimSpace(t)
}

// subject is the first line of a commit message.
func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimLeft(msg, "\n"), "\n")
	return strings.TrimSpace(s)
}
