package contracts_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	headSHA  = "abcdef0123456789abcdef0123456789abcdef01"
	baseSHA  = "2222222222222222222222222222222222222222"
	mergeSHA = "3333333333333333333333333333333333333333"
)

func validRequest() contracts.Request {
	return contracts.Request{
		PRID:         "acme/widgets#42",
		Repo:         "acme/widgets",
		PRNumber:     42,
		SourceBranch: "feature/login",
		TargetBranch: "main",
		HeadSHA:      headSHA,
		Strategy:     contracts.StrategyMerge,
		Title:        "Add login",
		RequestedBy:  "alice",
	}
}

// fieldsOf lists the fields named by a (possibly joined) validation error,
// in order, failing the test on any leaf that is not a *FieldError matching
// ErrInvalid.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var fs []string
		for _, e := range j.Unwrap() {
			fs = append(fs, fieldsOf(t, e)...)
		}
		return fs
	}
	var fe *contracts.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("error %q is not a *FieldError matching ErrInvalid", err)
		return []string{"?"}
	}
	return []string{fe.Field}
}

func TestRequestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *contracts.Request)
		want []string // fields named, in order
		msgs []string // substrings the error must contain
	}{
		{"valid", func(r *contracts.Request) {}, nil, nil},
		{"tab in title", func(r *contracts.Request) { r.Title = "a\tb" }, nil, nil},
		{"empty title", func(r *contracts.Request) { r.Title = "" }, nil, nil},
		{"every field bad", func(r *contracts.Request) {
			*r = contracts.Request{
				PRID: "acme/widgets#42", Repo: "acme/other", PRNumber: 7,
				SourceBranch: "a..b", TargetBranch: "", HeadSHA: "xyz", Strategy: "rebase",
				Title: "a\x00b", RequestedBy: "",
			}
		}, []string{"repo", "pr_number", "source_branch", "target_branch", "head_sha", "strategy", "title", "requested_by"},
			[]string{`repo "acme/other" does not match pr_id "acme/widgets#42"`, `pr_number 7 does not match pr_id`,
				`source_branch "a..b" is not a valid branch name`, "target_branch is empty", `head_sha "xyz" is not a 40-hex`,
				`strategy "rebase" is not one of`, "title contains control character", "requested_by is empty"}},
		{"bad pr_id still lists the rest", func(r *contracts.Request) {
			r.PRID, r.Repo, r.PRNumber, r.HeadSHA = "acme/widgets", "acme/../x", 0, ""
		}, []string{"pr_id", "repo", "pr_number", "head_sha"},
			[]string{`pr_id "acme/widgets" is not <owner>/<name>#<number>`, "pr_number must be a positive integer", "head_sha is missing"}},
		{"empty request", func(r *contracts.Request) { *r = contracts.Request{} },
			[]string{"pr_id", "repo", "pr_number", "source_branch", "target_branch", "head_sha", "strategy", "requested_by"},
			[]string{"repo is missing", "source_branch is empty", "head_sha is missing", "strategy is missing", "requested_by is empty"}},
		{"same branches", func(r *contracts.Request) { r.SourceBranch = "main" }, []string{"source_branch"},
			[]string{`source_branch equals target_branch "main"`}},
		{"upper-case sha", func(r *contracts.Request) { r.HeadSHA = strings.ToUpper(headSHA) }, []string{"head_sha"}, nil},
		{"long title", func(r *contracts.Request) { r.Title = strings.Repeat("t", contracts.MaxTitle+1) }, []string{"title"},
			[]string{"title is 1025 bytes long (at most 1024)"}},
		{"long requester", func(r *contracts.Request) { r.RequestedBy = strings.Repeat("r", contracts.MaxRequestedBy+1) }, []string{"requested_by"}, nil},
		{"newline in requester", func(r *contracts.Request) { r.RequestedBy = "bob\n" }, []string{"requested_by"}, nil},
		{"DEL in title", func(r *contracts.Request) { r.Title = "x\x7f" }, []string{"title"}, nil},
		{"title not UTF-8", func(r *contracts.Request) { r.Title = "x\xff" }, []string{"title"}, []string{"not valid UTF-8"}},
		{"branch HEAD", func(r *contracts.Request) { r.TargetBranch = "HEAD" }, []string{"target_branch"}, nil},
	}
	for _, tt := range tests {
		r := validRequest()
		tt.edit(&r)
		err := r.Validate()
		if got := fieldsOf(t, err); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Validate() names fields %q, want %q (error: %v)", tt.name, got, tt.want, err)
		}
		for _, m := range tt.msgs {
			if err == nil || !strings.Contains(err.Error(), m) {
				t.Errorf("%s: Validate() = %v, want it to contain %q", tt.name, err, m)
			}
		}
	}
}

func TestRequestValidateIdentity(t *testing.T) {
	tests := []struct {
		name     string
		prID     string
		repo     string
		number   int
		want     []string
		contains string
	}{
		{"consistent", "acme/widgets#42", "acme/widgets", 42, nil, ""},
		{"repo differs", "acme/widgets#42", "acme/gadgets", 42, []string{"repo"}, `repo "acme/gadgets" does not match pr_id "acme/widgets#42"`},
		{"repo differs in case", "acme/widgets#42", "Acme/widgets", 42, []string{"repo"}, "does not match"},
		{"number differs", "acme/widgets#42", "acme/widgets", 43, []string{"pr_number"}, `pr_number 43 does not match pr_id "acme/widgets#42"`},
		{"negative number", "acme/widgets#42", "acme/widgets", -42, []string{"pr_number"}, "does not match"},
		{"both differ", "acme/widgets#42", "acme/gadgets", 1, []string{"repo", "pr_number"}, ""},
		{"repo missing", "acme/widgets#42", "", 42, []string{"repo"}, `repo is missing (pr_id "acme/widgets#42" names "acme/widgets")`},
		{"number missing", "acme/widgets#42", "acme/widgets", 0, []string{"pr_number"}, "pr_number is missing"},
		{"pr_id missing", "", "acme/widgets", 42, []string{"pr_id"}, "pr_id"},
		{"pr_id bad, repo bad too", "acme#42", "acme", 42, []string{"pr_id", "repo"}, ""},
		{"pr_id with path", "../../etc#1", "../../etc", 1, []string{"pr_id", "repo"}, ""},
	}
	for _, tt := range tests {
		r := validRequest()
		r.PRID, r.Repo, r.PRNumber = tt.prID, tt.repo, tt.number
		err := r.ValidateIdentity()
		if got := fieldsOf(t, err); !slices.Equal(got, tt.want) {
			t.Errorf("%s: ValidateIdentity() names fields %q, want %q (error: %v)", tt.name, got, tt.want, err)
		}
		if tt.contains != "" && (err == nil || !strings.Contains(err.Error(), tt.contains)) {
			t.Errorf("%s: ValidateIdentity() = %v, want it to contain %q", tt.name, err, tt.contains)
		}
	}
}

func TestPayloadValidate(t *testing.T) {
	bad := validRequest()
	bad.HeadSHA, bad.Strategy = "nope", "rebase"
	many := make([]string, contracts.MaxListItems+1)
	tests := []struct {
		name string
		v    interface{ Validate() error }
		want []string
	}{
		{"validated ok", contracts.Validated{Request: validRequest(), BaseSHA: baseSHA}, nil},
		{"validated without base", contracts.Validated{Request: validRequest()}, nil},
		{"validated bad base", contracts.Validated{Request: validRequest(), BaseSHA: "x"}, []string{"base_sha"}},
		{"validated bad request", contracts.Validated{Request: bad, BaseSHA: baseSHA}, []string{"head_sha", "strategy"}},
		{"validated many checks", contracts.Validated{Request: validRequest(), Checks: make([]contracts.Check, contracts.MaxListItems+1)}, []string{"checks"}},
		{"merged ok", contracts.Merged{Request: validRequest(), MergeSHA: mergeSHA}, nil},
		{"merged without sha", contracts.Merged{Request: validRequest()}, []string{"merge_sha"}},
		{"merged many paths", contracts.Merged{Request: validRequest(), MergeSHA: mergeSHA, ChangedPaths: many}, []string{"changed_paths"}},
		{"notified ok", contracts.Notified{Request: validRequest(), MergeSHA: mergeSHA}, nil},
		{"notified bad sha", contracts.Notified{Request: validRequest(), MergeSHA: "m"}, []string{"merge_sha"}},
		{"notified many deliveries", contracts.Notified{Request: validRequest(), MergeSHA: mergeSHA, Deliveries: make([]contracts.Delivery, contracts.MaxListItems+1)}, []string{"deliveries"}},
		{"indexed ok", contracts.Indexed{Request: validRequest(), MergeSHA: mergeSHA}, nil},
		{"indexed no sha", contracts.Indexed{Request: validRequest()}, []string{"merge_sha"}},
		{"step_failed answering an invalid request", contracts.StepFailed{Request: bad, Step: contracts.StateValidating, Code: contracts.CodeInvalidRequest, Reason: "bad"}, nil},
		{"step_failed bad identity", contracts.StepFailed{Request: contracts.Request{PRID: "x"}, Step: contracts.StateValidating, Code: "c"}, []string{"pr_id", "repo", "pr_number"}},
		{"step_failed step MERGED", contracts.StepFailed{Request: validRequest(), Step: contracts.StateMerged, Code: "c"}, []string{"step"}},
		{"step_failed no step, no code", contracts.StepFailed{Request: validRequest()}, []string{"step", "code"}},
		{"step_failed long reason", contracts.StepFailed{Request: validRequest(), Step: contracts.StateMerging, Code: "c", Reason: strings.Repeat("r", contracts.MaxReason+1)}, []string{"reason"}},
		{"step_failed many conflicts", contracts.StepFailed{Request: validRequest(), Step: contracts.StateMerging, Code: contracts.CodeConflict, Conflicts: many}, []string{"conflicts"}},
		{"timed_out ok", contracts.TimedOut{Request: validRequest(), Step: contracts.StateIndexing}, nil},
		{"timed_out bad step", contracts.TimedOut{Request: validRequest(), Step: "MERGE_FAILED"}, []string{"step"}},
		{"state_changed ok", contracts.StateChanged{PRID: "acme/widgets#42", ToState: contracts.StateValidating}, nil},
		{"state_changed bad pr", contracts.StateChanged{PRID: "acme/widgets"}, []string{"pr_id"}},
	}
	for _, tt := range tests {
		err := tt.v.Validate()
		if got := fieldsOf(t, err); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Validate() names fields %q, want %q (error: %v)", tt.name, got, tt.want, err)
		}
	}
}

// samplePayloads has one fully populated payload per event type: every
// field set, so that the golden files show every wire name.
func samplePayloads() []struct {
	name string
	v    any
	keys []string // top-level JSON keys, exactly as design §3 lists them
} {
	req := validRequest()
	reqKeys := []string{"pr_id", "repo", "pr_number", "source_branch", "target_branch", "head_sha", "strategy", "title", "requested_by"}
	plus := func(ks ...string) []string { return append(slices.Clone(reqKeys), ks...) }
	return []struct {
		name string
		v    any
		keys []string
	}{
		{"requested", &req, reqKeys},
		{"validated", &contracts.Validated{Request: req, BaseSHA: baseSHA,
			Checks: []contracts.Check{{Context: "ci/build", State: "success"}, {Context: "ci/lint", State: "success"}}},
			plus("base_sha", "checks")},
		{"merged", &contracts.Merged{Request: req, BaseSHA: baseSHA, MergeSHA: mergeSHA, AlreadyMerged: true,
			ChangedPaths: []string{"README.md", "src/login.go"}},
			plus("base_sha", "merge_sha", "already_merged", "changed_paths")},
		{"notified", &contracts.Notified{Request: req, MergeSHA: mergeSHA, ChangedPaths: []string{"src/login.go"},
			Deliveries: []contracts.Delivery{{WatcherID: "w-1", Status: "delivered", Attempts: 2}}},
			plus("merge_sha", "changed_paths", "deliveries")},
		{"indexed", &contracts.Indexed{Request: req, MergeSHA: mergeSHA, Documents: 3},
			plus("merge_sha", "documents")},
		{"step_failed", &contracts.StepFailed{Request: req, Step: contracts.StateMerging, Code: contracts.CodeConflict,
			Reason: "src/login.go conflicts", Retryable: false, Conflicts: []string{"src/login.go"}},
			plus("step", "code", "reason", "retryable", "conflicts")},
		{"timed_out", &contracts.TimedOut{Request: req, Step: contracts.StateNotifying,
			Deadline:    time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			LastEventID: "01J9Z3Y6K8QX4T2N5M7P0R1S2V", Diagnosis: "trigger published; 1 pending on consumer notifier"},
			plus("step", "deadline", "last_event_id", "diagnosis")},
		{"state_changed", &contracts.StateChanged{PRID: req.PRID, FromState: contracts.StateNotifying,
			ToState: contracts.StateMergeFailed, FailedStep: contracts.StateNotifying, Merged: true, MergeSHA: mergeSHA,
			Reason: "webhook_failed: 2 of 3 watchers unreachable"},
			[]string{"pr_id", "from_state", "to_state", "failed_step", "merged", "merge_sha", "reason"}},
	}
}

func TestPayloadGolden(t *testing.T) {
	for _, tt := range samplePayloads() {
		got, err := json.MarshalIndent(tt.v, "", "  ")
		if err != nil {
			t.Fatalf("marshal %s: %v", tt.name, err)
		}
		got = append(got, '\n')
		file := filepath.Join("testdata", "golden", tt.name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("read golden file (run go test -update to create it): %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s payload JSON differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", tt.name, file, got, want)
		}

		// The golden file decodes back into the same value: the wire format
		// is readable by the current structs, not only writable.
		back := reflect.New(reflect.TypeOf(tt.v).Elem()).Interface()
		if err := json.Unmarshal(want, back); err != nil {
			t.Errorf("decode %s: %v", file, err)
		} else if !reflect.DeepEqual(back, tt.v) {
			t.Errorf("%s decodes to %+v, want %+v", file, back, tt.v)
		}
	}
}

func TestPayloadFieldNames(t *testing.T) {
	for _, tt := range samplePayloads() {
		data, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatalf("marshal %s: %v", tt.name, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("unmarshal %s: %v", tt.name, err)
		}
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		sort.Strings(got)
		want := slices.Clone(tt.keys)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s payload keys = %q, want %q", tt.name, got, want)
		}
	}

	// Nested objects: checks {context, state}, deliveries {watcher_id, status, attempts}.
	nested := []struct {
		v    any
		want []string
	}{
		{contracts.Check{Context: "c", State: "success"}, []string{"context", "state"}},
		{contracts.Delivery{WatcherID: "w", Status: "delivered", Attempts: 1}, []string{"attempts", "status", "watcher_id"}},
	}
	for _, n := range nested {
		data, _ := json.Marshal(n.v)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		var got []string
		for k := range m {
			got = append(got, k)
		}
		sort.Strings(got)
		if !slices.Equal(got, n.want) {
			t.Errorf("%T keys = %q, want %q", n.v, got, n.want)
		}
	}
}

func TestPayloadIgnoresUnknownFields(t *testing.T) {
	in := `{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42,"merge_sha":"` + mergeSHA +
		`","documents":3,"future_field":{"x":[1,2]},"another":"y"}`
	var got contracts.Indexed
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatalf("unmarshal with unknown fields: %v", err)
	}
	if got.PRID != "acme/widgets#42" || got.PRNumber != 42 || got.MergeSHA != mergeSHA || got.Documents != 3 {
		t.Errorf("decoded %+v, want pr_id, pr_number, merge_sha and documents kept", got)
	}
}
