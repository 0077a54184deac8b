package validator_test

import (
	"strings"
	"testing"

	"github.com/prsaga/prsaga/services/validator"
)

func TestCombined(t *testing.T) {
	st := func(states ...string) []validator.Status {
		var out []validator.Status
		for i, s := range states {
			out = append(out, validator.Status{Context: string(rune('a' + i)), State: s})
		}
		return out
	}
	for _, tc := range []struct {
		in   []validator.Status
		want string
	}{
		{nil, "pending"},
		{st("success"), "success"},
		{st("success", "success"), "success"},
		{st("success", "pending"), "pending"},
		{st("pending", "failure"), "failure"},
		{st("success", "error"), "failure"},
	} {
		if got := validator.Combined(tc.in); got != tc.want {
			t.Errorf("Combined(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStatusValidate(t *testing.T) {
	for _, tc := range []struct {
		s       validator.Status
		problem string // "" = valid
	}{
		{validator.Status{Context: "ci/build: linux", State: "success", Description: "ok\tfine"}, ""},
		{validator.Status{Context: "", State: "success"}, "context is empty"},
		{validator.Status{Context: " ci", State: "success"}, "leading or trailing spaces"},
		{validator.Status{Context: "c\ni", State: "success"}, "control character"},
		{validator.Status{Context: strings.Repeat("c", 256), State: "success"}, "at most 255"},
		{validator.Status{Context: "ci"}, "state is missing"},
		{validator.Status{Context: "ci", State: "done"}, `state "done" is not one of`},
		{validator.Status{Context: "ci", State: "success", Description: strings.Repeat("d", 1025)}, "description is 1025 bytes"},
	} {
		err := tc.s.Validate()
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want nil", tc.s, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tc.s, err, tc.problem)
		}
	}
}

func TestValidateRequired(t *testing.T) {
	if err := validator.ValidateRequired([]string{"ci", "lint"}); err != nil {
		t.Errorf("ValidateRequired(ci, lint) = %v", err)
	}
	if err := validator.ValidateRequired(nil); err != nil {
		t.Errorf("ValidateRequired(nil) = %v", err)
	}
	if err := validator.ValidateRequired([]string{"ci", "ci"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("ValidateRequired(ci, ci) = %v, want a duplicate error", err)
	}
	if err := validator.ValidateRequired([]string{"ci", ""}); err == nil || !strings.Contains(err.Error(), "required_contexts[1] is empty") {
		t.Errorf("ValidateRequired(ci, \"\") = %v, want the empty item named", err)
	}
}
