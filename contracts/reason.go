package contracts

import (
	"strings"
	"unicode/utf8"
)

// FitReason makes s fit a step_failed reason or a timed_out diagnosis as
// the validation requires: one line (newlines become "; ", other control
// characters are dropped), valid UTF-8, at most MaxReason bytes — cut on a
// rune boundary and marked with "…". Every service that builds a reason
// from an error or from input goes through it, so that a long or odd
// message never makes its own failure event invalid.
func FitReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, strings.ReplaceAll(s, "\n", "; "))
	if len(s) <= MaxReason {
		return s
	}
	n := MaxReason - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
