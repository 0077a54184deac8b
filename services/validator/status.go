package validator

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Commit status states, as the big forges name them.
const (
	StatePending = "pending"
	StateSuccess = "success"
	StateFailure = "failure"
	StateError   = "error"
)

// Limits on what a CI system may post.
const (
	MaxContext     = 255
	MaxDescription = 1024
	// MaxRequired bounds the required contexts of one branch.
	MaxRequired = 100
)

// Status is the latest state of one context (a CI job) on one commit.
type Status struct {
	Context     string    `json:"context"`
	State       string    `json:"state"`
	Description string    `json:"description"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Validate checks what a client may set: context, state, description.
func (s Status) Validate() error {
	if err := ValidateContext("context", s.Context); err != nil {
		return err
	}
	if err := ValidateState(s.State); err != nil {
		return err
	}
	return validText("description", s.Description, MaxDescription)
}

// ValidateState checks a commit status state.
func ValidateState(s string) error {
	switch s {
	case StatePending, StateSuccess, StateFailure, StateError:
		return nil
	case "":
		return fmt.Errorf("state is missing (want pending, success, failure or error)")
	}
	return fmt.Errorf("state %q is not one of pending, success, failure, error", clip(s))
}

// ValidateContext checks a status context name such as "ci" or
// "ci/build: linux": 1–255 bytes of printable UTF-8 without surrounding
// spaces. field names it in the error.
func ValidateContext(field, c string) error {
	switch {
	case c == "":
		return fmt.Errorf("%s is empty", field)
	case strings.TrimSpace(c) != c:
		return fmt.Errorf("%s %q has leading or trailing spaces", field, clip(c))
	}
	return validText(field, c, MaxContext)
}

// ValidateRequired checks a branch's list of required contexts: each a valid
// context, no duplicates, at most MaxRequired.
func ValidateRequired(contexts []string) error {
	if len(contexts) > MaxRequired {
		return fmt.Errorf("required_contexts has %d items (at most %d)", len(contexts), MaxRequired)
	}
	seen := make(map[string]bool, len(contexts))
	for i, c := range contexts {
		if err := ValidateContext(fmt.Sprintf("required_contexts[%d]", i), c); err != nil {
			return err
		}
		if seen[c] {
			return fmt.Errorf("required_contexts lists %q twice", clip(c))
		}
		seen[c] = true
	}
	return nil
}

// Combined is the state of a commit over all its contexts: failure if any
// context failed or errored, else pending if any is pending or there are
// none, else success.
func Combined(statuses []Status) string {
	state := StateSuccess
	if len(statuses) == 0 {
		return StatePending
	}
	for _, s := range statuses {
		switch s.State {
		case StateFailure, StateError:
			return StateFailure
		case StatePending:
			state = StatePending
		}
	}
	return state
}

func validText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%s is %d bytes long (at most %d)", field, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return fmt.Errorf("%s contains control character %q", field, r)
		}
	}
	return nil
}

// clip keeps hostile input out of error messages beyond a readable length.
func clip(s string) string {
	n := 80
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
