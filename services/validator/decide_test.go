package validator_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/validator"
)

const (
	head   = "1111111111111111111111111111111111111111"
	moved  = "2222222222222222222222222222222222222222"
	target = "3333333333333333333333333333333333333333"
	run    = "run-1"
	other  = "run-0"
)

func request() contracts.Request {
	return contracts.Request{
		PRID: "acme/widgets#42", Repo: "acme/widgets", PRNumber: 42,
		SourceBranch: "feature/x", TargetBranch: "main", HeadSHA: head,
		Strategy: "merge", Title: "Add x", RequestedBy: "alice",
	}
}

// valid returns facts under which the run validates; each case spoils one.
func valid() validator.Facts {
	return validator.Facts{
		CorrelationID: run,
		Attempt:       1,
		Request:       request(),
		SourceHead:    head,
		TargetHead:    target,
		Required:      []string{"ci", "lint"},
		Statuses: []validator.Status{
			{Context: "ci", State: "success"},
			{Context: "lint", State: "success"},
			{Context: "optional", State: "failure"},
		},
	}
}

func TestDecide(t *testing.T) {
	bad := request()
	bad.HeadSHA, bad.Title = "nothex", "two\nlines"
	invalid := bad.Validate()
	if invalid == nil {
		t.Fatal("the spoiled request validates: the test is wrong")
	}

	for _, tc := range []struct {
		name       string
		spoil      func(f *validator.Facts)
		code       string
		retryable  bool
		reasonHas  string
		wantLock   validator.Lock
		lockChange bool
	}{
		{name: "valid", spoil: func(*validator.Facts) {},
			wantLock: validator.Lock{Holder: run, Attempt: 1}, lockChange: true},
		{name: "valid while holding the lock (re-entrant)", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Holder: run, Attempt: 1} },
			wantLock: validator.Lock{Holder: run, Attempt: 1}},
		{name: "valid retry of the holder raises the lock's attempt", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Holder: run, Attempt: 1}; f.Attempt = 2 },
			wantLock: validator.Lock{Holder: run, Attempt: 2}, lockChange: true},
		{name: "valid with no required contexts", spoil: func(f *validator.Facts) { f.Required = nil; f.Statuses = nil },
			wantLock: validator.Lock{Holder: run, Attempt: 1}, lockChange: true},
		{name: "invalid request", spoil: func(f *validator.Facts) { f.Request = bad; f.Invalid = invalid },
			code: contracts.CodeInvalidRequest, reasonHas: "head_sha"},
		{name: "invalid beats everything", spoil: func(f *validator.Facts) {
			f.Request, f.Invalid = bad, invalid
			f.Lock = validator.Lock{Holder: other, Merged: true}
		}, code: contracts.CodeInvalidRequest, reasonHas: "title", wantLock: validator.Lock{Holder: other, Merged: true}},
		{name: "repository missing", spoil: func(f *validator.Facts) {
			f.Missing = fmt.Errorf("repository acme/widgets: %w", validator.ErrNotFound)
		}, code: contracts.CodeNotFound, reasonHas: "repository acme/widgets"},
		{name: "branch missing", spoil: func(f *validator.Facts) {
			f.Missing = fmt.Errorf("branch main of repository acme/widgets: %w", validator.ErrNotFound)
		}, code: contracts.CodeNotFound, reasonHas: "branch main"},
		{name: "head moved", spoil: func(f *validator.Facts) { f.SourceHead = moved },
			code: contracts.CodeHeadMoved, reasonHas: moved},
		{name: "required context pending", spoil: func(f *validator.Facts) { f.Statuses[1].State = "pending" },
			code: contracts.CodeChecksPending, retryable: true, reasonHas: "lint (pending)"},
		{name: "required context missing", spoil: func(f *validator.Facts) { f.Statuses = f.Statuses[:1] },
			code: contracts.CodeChecksPending, retryable: true, reasonHas: "lint (missing)"},
		{name: "required context failed", spoil: func(f *validator.Facts) { f.Statuses[0].State = "failure" },
			code: contracts.CodeChecksFailed, retryable: true, reasonHas: "ci (failure)"},
		{name: "required context errored", spoil: func(f *validator.Facts) { f.Statuses[1].State = "error" },
			code: contracts.CodeChecksFailed, retryable: true, reasonHas: "lint (error)"},
		{name: "failure beats pending", spoil: func(f *validator.Facts) { f.Statuses[0].State = "pending"; f.Statuses[1].State = "error" },
			code: contracts.CodeChecksFailed, retryable: true, reasonHas: "lint (error)"},
		{name: "another run holds the lock", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Holder: other, Attempt: 1} },
			code: contracts.CodeInProgress, retryable: true, reasonHas: other, wantLock: validator.Lock{Holder: other, Attempt: 1}},
		{name: "in progress beats missing branch", spoil: func(f *validator.Facts) {
			f.Lock = validator.Lock{Holder: other, Attempt: 1}
			f.Missing = fmt.Errorf("branch x: %w", validator.ErrNotFound)
		}, code: contracts.CodeInProgress, retryable: true, reasonHas: other, wantLock: validator.Lock{Holder: other, Attempt: 1}},
		{name: "merged", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Merged: true} },
			code: contracts.CodeAlreadyMerged, reasonHas: "already merged", wantLock: validator.Lock{Merged: true}},
		{name: "merged while the merging run still holds the lock", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Holder: other, Attempt: 1, Merged: true} },
			code: contracts.CodeAlreadyMerged, reasonHas: "already merged", wantLock: validator.Lock{Holder: other, Attempt: 1, Merged: true}},
		{name: "merged, even for the run that holds it", spoil: func(f *validator.Facts) { f.Lock = validator.Lock{Holder: run, Attempt: 1, Merged: true} },
			code: contracts.CodeAlreadyMerged, reasonHas: "already merged", wantLock: validator.Lock{Holder: run, Attempt: 1, Merged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := valid()
			tc.spoil(&f)
			out := validator.Decide(f)
			if (out.Validated == nil) == (out.Failed == nil) {
				t.Fatalf("Decide: Validated = %v, Failed = %v; want exactly one", out.Validated, out.Failed)
			}
			if got := out.Code(); got != tc.code {
				t.Fatalf("code = %q (%+v), want %q", got, out.Failed, tc.code)
			}
			if out.Lock != tc.wantLock || out.LockChanged != tc.lockChange {
				t.Errorf("lock = %+v changed=%v, want %+v changed=%v", out.Lock, out.LockChanged, tc.wantLock, tc.lockChange)
			}
			if tc.code == "" {
				checkValidated(t, f, out.Validated)
				return
			}
			fl := out.Failed
			if fl.Step != contracts.StateValidating || fl.Retryable != tc.retryable {
				t.Errorf("step, retryable = %s, %v; want VALIDATING, %v", fl.Step, fl.Retryable, tc.retryable)
			}
			if !strings.Contains(fl.Reason, tc.reasonHas) {
				t.Errorf("reason %q does not mention %q", fl.Reason, tc.reasonHas)
			}
			if fl.Request != f.Request {
				t.Errorf("request carried = %+v, want %+v", fl.Request, f.Request)
			}
			// The ledger dead-letters a step_failed that does not validate.
			if err := fl.Validate(); err != nil {
				t.Errorf("step_failed payload does not validate: %v", err)
			}
		})
	}
}

func checkValidated(t *testing.T, f validator.Facts, v *contracts.Validated) {
	t.Helper()
	if v.Request != f.Request || v.HeadSHA != head || v.BaseSHA != target {
		t.Errorf("validated = %+v; want the request pinned to head %s on base %s", v, head, target)
	}
	want := make([]contracts.Check, 0)
	for _, c := range f.Required {
		want = append(want, contracts.Check{Context: c, State: "success"})
	}
	if fmt.Sprint(v.Checks) != fmt.Sprint(want) || v.Checks == nil {
		t.Errorf("checks = %#v, want %#v (required contexts only, never nil)", v.Checks, want)
	}
	if err := v.Validate(); err != nil {
		t.Errorf("validated payload does not validate: %v", err)
	}
}

func TestReason(t *testing.T) {
	joined := errors.Join(errors.New("a is bad"), errors.New("b\tis\x01bad"))
	if got, want := validator.Reason(joined.Error()), "a is bad; b\tisbad"; got != want {
		t.Errorf("Reason(joined) = %q, want %q", got, want)
	}
	long := validator.Reason(strings.Repeat("é", contracts.MaxReason))
	if len(long) > contracts.MaxReason || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") {
		t.Errorf("Reason(long) is %d bytes, suffix %q; want at most %d ending in …", len(long), long[len(long)-6:], contracts.MaxReason)
	}
	if err := (contracts.StepFailed{Request: request(), Step: contracts.StateValidating, Code: "x", Reason: long}).Validate(); err != nil {
		t.Errorf("a clipped reason does not validate: %v", err)
	}
}
