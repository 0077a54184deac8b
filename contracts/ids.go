package contracts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalid marks a validation error; match with errors.Is.
var ErrInvalid = errors.New("invalid")

// FieldError names the field that failed validation and why.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string        { return e.Field + " " + e.Problem }
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// ValidateEventID checks a CloudEvent id: 1–128 characters of [A-Za-z0-9._:-].
func ValidateEventID(id string) error {
	if id == "" {
		return fieldErr("id", "is empty")
	}
	if len(id) > 128 {
		return fieldErr("id", "is %d characters long (at most 128)", len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return fieldErr("id", "%q contains %q (allowed: letters, digits, . _ : -)", truncate(id), c)
		}
	}
	return nil
}

// ValidateRepo checks a repository id "owner/name": two parts of 1–100
// characters of [A-Za-z0-9._-], neither "." nor containing "..". Repository ids
// become paths under the repos dir, so nothing else gets through.
func ValidateRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return fieldErr("repo", "%q is not owner/name", truncate(repo))
	}
	for _, p := range []string{owner, name} {
		if err := validateRepoPart(p); err != nil {
			return fieldErr("repo", "%q: %s", truncate(repo), err)
		}
	}
	return nil
}

func validateRepoPart(p string) error {
	switch {
	case p == "":
		return errors.New("has an empty part")
	case len(p) > 100:
		return errors.New("has a part longer than 100 characters")
	case p == "." || strings.Contains(p, ".."):
		return errors.New(`has a part that is "." or contains ".."`)
	case strings.HasSuffix(p, ".git") || strings.HasSuffix(p, ".lock"):
		return errors.New(`has a part ending in ".git" or ".lock"`)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("contains %q (allowed: letters, digits, . _ -)", c)
		}
	}
	return nil
}

// MaxPRNumber bounds PR numbers so that they fit every store's integer type.
const MaxPRNumber = 1<<31 - 1

// PRID builds the PR id "<repo>#<number>".
func PRID(repo string, number int) string { return repo + "#" + strconv.Itoa(number) }

// ParsePRID splits and validates a PR id "<owner>/<name>#<number>".
func ParsePRID(id string) (repo string, number int, err error) {
	repo, num, ok := strings.Cut(id, "#")
	if !ok {
		return "", 0, fieldErr("pr_id", "%q is not <owner>/<name>#<number>", truncate(id))
	}
	if err := ValidateRepo(repo); err != nil {
		return "", 0, fieldErr("pr_id", "%q: %s", truncate(id), err)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > MaxPRNumber || strings.HasPrefix(num, "0") || strings.HasPrefix(num, "+") {
		return "", 0, fieldErr("pr_id", "%q: number must be a positive integer", truncate(id))
	}
	return repo, n, nil
}

// ValidateBranch checks a branch name with the rules of
// `git check-ref-format --branch` (refs/heads/<name>, not "HEAD", not
// starting with "-"), so that it can never escape refs/heads. It is stricter
// than git: at most 255 bytes, valid UTF-8, and not "@".
func ValidateBranch(field, name string) error {
	bad := func(why string) error {
		return fieldErr(field, "%q is not a valid branch name: %s", truncate(name), why)
	}
	switch {
	case name == "":
		return fieldErr(field, "is empty")
	case len(name) > 255:
		return bad("longer than 255 characters")
	case !utf8.ValidString(name):
		return bad("not UTF-8")
	case name == "@" || name == "HEAD":
		return bad(`is "@" or "HEAD"`)
	case strings.HasPrefix(name, "-"):
		return bad(`starts with "-"`)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return bad(`starts or ends with "/"`)
	case strings.HasSuffix(name, "."):
		return bad(`ends with "."`)
	case strings.Contains(name, ".."):
		return bad(`contains ".."`)
	case strings.Contains(name, "//"):
		return bad(`contains "//"`)
	case strings.Contains(name, "@{"):
		return bad(`contains "@{"`)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("contains %q", r))
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad(`a component starts with "." or ends with ".lock"`)
		}
	}
	return nil
}

// ValidateSHA checks a full 40-hex lower-case git commit id.
func ValidateSHA(field, sha string) error {
	if sha == "" {
		return fieldErr(field, "is missing (want a 40-hex commit sha)")
	}
	if len(sha) != 40 {
		return fieldErr(field, "%q is not a 40-hex commit sha", truncate(sha))
	}
	for i := 0; i < len(sha); i++ {
		if c := sha[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fieldErr(field, "%q is not a 40-hex lower-case commit sha", truncate(sha))
		}
	}
	return nil
}

// Strategies.
const (
	StrategyMerge       = "merge"
	StrategySquash      = "squash"
	StrategyFastForward = "fast-forward"
)

// ValidateStrategy checks a merge strategy.
func ValidateStrategy(s string) error {
	switch s {
	case StrategyMerge, StrategySquash, StrategyFastForward:
		return nil
	case "":
		return fieldErr("strategy", "is missing (want merge, squash or fast-forward)")
	}
	return fieldErr("strategy", "%q is not one of merge, squash, fast-forward", truncate(s))
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// truncate keeps hostile input out of error messages beyond a readable length.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
