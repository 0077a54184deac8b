package contracts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFitReason(t *testing.T) {
	long := strings.Repeat("é", MaxReason) // 2 bytes a rune: the cut falls inside one
	cases := []struct{ in, want string }{
		{"short", "short"},
		{"two\nlines", "two; lines"},
		{"bell\x07 and del\x7f", "bell and del"},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, c := range cases {
		if got := FitReason(c.in); got != c.want {
			t.Errorf("FitReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := FitReason(long)
	if len(got) > MaxReason || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("FitReason(%d bytes) = %d bytes, valid %v, ends %q", len(long), len(got), utf8.ValidString(got), got[len(got)-3:])
	}
	for _, in := range []string{long, "a\nb", strings.Repeat("x", MaxReason+1)} {
		f := StepFailed{Step: StateMerging, Code: CodeConflict, Reason: FitReason(in)}
		if err := validText("reason", f.Reason, MaxReason, false); err != nil {
			t.Errorf("a fitted reason is refused: %v", err)
		}
	}
}
