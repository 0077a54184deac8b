package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/server"
)

// pr returns a valid request of acme/widgets#n.
func pr(n int, source, target, head string) contracts.Request {
	return contracts.Request{
		PRID: contracts.PRID("acme/widgets", n), Repo: "acme/widgets", PRNumber: n,
		SourceBranch: source, TargetBranch: target, HeadSHA: head,
		Strategy: "merge", Title: "PR", RequestedBy: "alice",
	}
}

// send publishes a client's request and returns its id (the run).
func (h *harness) send(r contracts.Request) string {
	h.t.Helper()
	return h.emit(func(id string) (*event.Event, error) {
		return contracts.NewRequested(id, "https://forge.example/test", time.Now(), r, "")
	})
}

// retry publishes the ledger's replay of run's request at attempt and
// returns the replayed event's id.
func (h *harness) retry(r contracts.Request, run string, attempt int) string {
	h.t.Helper()
	return h.emit(func(id string) (*event.Event, error) {
		return contracts.New(id, contracts.TypeMergeRequested, contracts.SourceLedger, r.PRID, time.Now(), r,
			contracts.Meta{CorrelationID: run, Attempt: attempt, ReplayOf: run})
	})
}

// emit builds an event under a new id, publishes it and returns the id.
func (h *harness) emit(build func(id string) (*event.Event, error)) string {
	h.t.Helper()
	id := step.NewID()
	e, err := build(id)
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(e)
	return id
}

// startGreenPR starts a validator whose repository has main and, on top of
// it, branch with one commit (msg) that passes the required check "ci"; it
// returns PR n's request to merge branch into main.
func startGreenPR(t *testing.T, n int, branch, msg string) (*harness, contracts.Request) {
	t.Helper()
	h := startValidator(t)
	h.repo.Commit("main", "base")
	head := h.repo.Commit(branch, msg)
	h.postStatus(head, "ci", "success")
	return h, pr(n, branch, "main", head)
}

// conflictThenNewRun publishes run's step_failed(MERGING, conflict) at
// attempt, waits for the lock's release, and returns a new run of req that
// validated and holds the lock.
func (h *harness) conflictThenNewRun(req contracts.Request, run string, attempt int) string {
	h.t.Helper()
	h.follow(contracts.TypeStepFailed, contracts.ServiceMerger, req.PRNumber, run, attempt,
		contracts.StepFailed{Request: req, Step: contracts.StateMerging, Code: contracts.CodeConflict, Reason: "conflict in a.txt", Conflicts: []string{"a.txt"}})
	h.waitLock(req.PRNumber, "released", func(l validator.Lock) bool { return !l.Held() })
	next := h.send(req)
	h.out.validated(next)
	if l := h.lock(req.PRNumber); l != (validator.Lock{Holder: next, Attempt: 1}) {
		h.t.Fatalf("lock after the new run = %+v; want held by %s", l, next)
	}
	return next
}

// TestEveryRefusalCode answers each kind of bad request with its code, on
// the request's own run, with the retryable flag the forge acts on.
func TestEveryRefusalCode(t *testing.T) {
	h := startValidator(t)
	h.repo.Commit("main", "base")
	green := h.repo.Commit("feature/green", "green")
	h.postStatus(green, "ci", "success")
	red := h.repo.Commit("feature/red", "red")
	h.postStatus(red, "ci", "failure")
	errored := h.repo.Commit("feature/errored", "errored")
	h.postStatus(errored, "ci", "error")
	pending := h.repo.Commit("feature/pending", "pending")
	h.postStatus(pending, "ci", "pending")
	unchecked := h.repo.Commit("feature/unchecked", "unchecked")
	moved := h.repo.Commit("feature/moved", "moved 1")
	h.postStatus(moved, "ci", "success")
	h.repo.Commit("feature/moved", "moved 2") // the branch moved on after the user looked

	// PR 50 is held by a run in flight; PR 51 is merged.
	holder := h.send(pr(50, "feature/green", "main", green))
	h.out.validated(holder)
	merged := h.send(pr(51, "feature/green", "main", green))
	v := h.out.validated(merged)
	h.follow(contracts.TypeMerged, contracts.ServiceMerger, 51, merged, 1, contracts.Merged{Request: v.Request, MergeSHA: strings.Repeat("cd", 20)})
	h.waitLock(51, "merged", func(l validator.Lock) bool { return l.Merged })

	with := func(n int, f func(r *contracts.Request)) contracts.Request {
		r := pr(n, "feature/green", "main", green)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name      string
		req       contracts.Request
		code      string
		retryable bool
		says      string
	}{
		{"bad strategy", with(60, func(r *contracts.Request) { r.Strategy = "rebase" }), contracts.CodeInvalidRequest, false, "strategy"},
		{"bad branch name", with(61, func(r *contracts.Request) { r.SourceBranch = "feature/../x" }), contracts.CodeInvalidRequest, false, "source_branch"},
		{"same branches", with(62, func(r *contracts.Request) { r.SourceBranch = "main" }), contracts.CodeInvalidRequest, false, "equals target_branch"},
		{"short head sha", with(63, func(r *contracts.Request) { r.HeadSHA = "abc" }), contracts.CodeInvalidRequest, false, "head_sha"},
		{"no such repository", with(64, func(r *contracts.Request) { r.Repo, r.PRID = "acme/nothing", "acme/nothing#64" }), contracts.CodeNotFound, false, "repository acme/nothing"},
		{"no such source branch", with(65, func(r *contracts.Request) { r.SourceBranch = "feature/gone" }), contracts.CodeNotFound, false, "feature/gone"},
		{"no such target branch", with(66, func(r *contracts.Request) { r.TargetBranch = "release/9" }), contracts.CodeNotFound, false, "release/9"},
		{"head moved", pr(67, "feature/moved", "main", moved), contracts.CodeHeadMoved, false, moved},
		{"check failed", pr(68, "feature/red", "main", red), contracts.CodeChecksFailed, true, "ci (failure)"},
		{"check errored", pr(69, "feature/errored", "main", errored), contracts.CodeChecksFailed, true, "ci (error)"},
		{"check pending", pr(70, "feature/pending", "main", pending), contracts.CodeChecksPending, true, "ci (pending)"},
		{"check missing", pr(71, "feature/unchecked", "main", unchecked), contracts.CodeChecksPending, true, "ci (missing)"},
		{"another run in flight", pr(50, "feature/green", "main", green), contracts.CodeInProgress, true, holder},
		{"already merged", pr(51, "feature/green", "main", green), contracts.CodeAlreadyMerged, false, "already merged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := h.send(tc.req)
			f := h.out.failed(run, tc.code) // checks step, code and the run's own correlation id
			if f.Retryable != tc.retryable || !strings.Contains(f.Reason, tc.says) {
				t.Errorf("step_failed(%s) retryable=%v reason %q; want retryable=%v, naming %q", f.Code, f.Retryable, f.Reason, tc.retryable, tc.says)
			}
			if f.PRID != tc.req.PRID || f.HeadSHA != tc.req.HeadSHA {
				t.Errorf("step_failed carries %s@%s; want the request's %s@%s", f.PRID, f.HeadSHA, tc.req.PRID, tc.req.HeadSHA)
			}
		})
	}
	if l := h.lock(50); l != (validator.Lock{Holder: holder, Attempt: 1}) {
		t.Errorf("lock of PR #50 after a refused request = %+v; want still held by %s", l, holder)
	}
}

// TestLockAcrossRuns follows design §4 "One run per PR" across runs: a
// second request while a run is in flight is refused and does not disturb
// it; only the PR's merged or the holder's failure at VALIDATING or MERGING
// releases the lock (a timeout, a later step's failure or a stale attempt's
// failure never does); after such a failure a new request starts a new run
// and validates.
func TestLockAcrossRuns(t *testing.T) {
	h, req := startGreenPR(t, 80, "feature/lock", "lock 1")
	head := req.HeadSHA

	a := h.send(req)
	va := h.out.validated(a)
	if va.HeadSHA != head {
		t.Fatalf("validated head %s, want %s", va.HeadSHA, head)
	}

	// A second run is refused; its refusal, seen by the lock consumer, does
	// not touch the holder's lock.
	b := h.send(req)
	h.out.failed(b, contracts.CodeInProgress)
	h.waitProcessed(h.out.answer(b).Event.ID())
	if l := h.lock(80); l != (validator.Lock{Holder: a, Attempt: 1}) {
		t.Fatalf("lock after the refused run = %+v; want held by %s at attempt 1", l, a)
	}
	// The holder's own retry re-enters the lock and validates again.
	a2 := h.retry(req, a, 2)
	if v := h.out.validatedIn(a2, a); v.HeadSHA != head {
		t.Errorf("the holder's retry validated head %s, want %s", v.HeadSHA, head)
	}
	h.waitLock(80, "at attempt 2", func(l validator.Lock) bool { return l == validator.Lock{Holder: a, Attempt: 2} })

	// None of these releases the lock: a new request is still refused.
	for _, tc := range []struct {
		name    string
		typ     string
		service string
		attempt int
		payload any
	}{
		{"timed out at MERGING", contracts.TypeTimedOut, contracts.ServiceLedger, 2,
			contracts.TimedOut{Request: req, Step: contracts.StateMerging, Deadline: time.Now(), LastEventID: a2, Diagnosis: "slow"}},
		{"timed out at VALIDATING", contracts.TypeTimedOut, contracts.ServiceLedger, 2,
			contracts.TimedOut{Request: req, Step: contracts.StateValidating, Deadline: time.Now(), LastEventID: a2, Diagnosis: "slow"}},
		{"failed at MERGING in a stale attempt", contracts.TypeStepFailed, contracts.ServiceMerger, 1,
			contracts.StepFailed{Request: req, Step: contracts.StateMerging, Code: contracts.CodeRetriesExhausted, Reason: "late"}},
		{"failed at NOTIFYING", contracts.TypeStepFailed, contracts.ServiceNotifier, 2,
			contracts.StepFailed{Request: req, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: "down"}},
		{"another run's refusal", contracts.TypeStepFailed, contracts.ServiceValidator, 1,
			contracts.StepFailed{Request: req, Step: contracts.StateValidating, Code: contracts.CodeInProgress, Reason: "in flight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := a
			if strings.HasPrefix(tc.name, "another run") {
				run = b
			}
			e := h.follow(tc.typ, tc.service, 80, run, tc.attempt, tc.payload)
			h.waitProcessed(e.ID())
			if l := h.lock(80); l != (validator.Lock{Holder: a, Attempt: 2}) {
				t.Fatalf("lock = %+v; want still held by %s at attempt 2", l, a)
			}
			c := h.send(req)
			if f := h.out.failed(c, contracts.CodeInProgress); !strings.Contains(f.Reason, a) {
				t.Errorf("in_progress reason %q does not name the holder %s", f.Reason, a)
			}
		})
	}

	// The holder fails at MERGING (MERGE_FAILED by a pre-pivot step): the
	// lock is released and a new request starts a new run that validates.
	d := h.conflictThenNewRun(req, a, 2)

	// The new holder's retry finds the head moved: its failure at
	// VALIDATING releases the lock too, and the next request (for the new
	// head, green) validates.
	moved := h.repo.Commit("feature/lock", "lock 2")
	h.postStatus(moved, "ci", "success")
	h.out.failedIn(h.retry(req, d, 2), d, contracts.CodeHeadMoved)
	h.waitLock(80, "released", func(l validator.Lock) bool { return !l.Held() })
	e := h.send(pr(80, "feature/lock", "main", moved))
	if v := h.out.validated(e); v.HeadSHA != moved {
		t.Errorf("validated head %s, want the new head %s", v.HeadSHA, moved)
	}
}

// The default required contexts come from the options: they gate the
// decision and are what GET protection shows for an unconfigured branch.
func TestDefaultRequiredFromOptions(t *testing.T) {
	h := startValidatorWith(t, server.Options{DefaultRequired: []string{"build", "lint"}})
	h.repo.Commit("main", "base")
	head := h.repo.Commit("feature/d", "d")
	h.postStatus(head, "build", "success")
	h.out.failed(h.send(pr(90, "feature/d", "main", head)), contracts.CodeChecksPending)
	h.postStatus(head, "lint", "success")
	if v := h.out.validated(h.send(pr(91, "feature/d", "main", head))); len(v.Checks) != 2 {
		t.Errorf("validated checks = %v; want build and lint", v.Checks)
	}
	h.getJSON("/api/v1/repos/acme/widgets/protection/main",
		`{"branch":"main","configured":false,"repo":"acme/widgets","required_contexts":["build","lint"]}`)

	// Nothing required by default: a head without statuses validates.
	h = startValidatorWith(t, server.Options{DefaultRequired: []string{}})
	h.repo.Commit("main", "base")
	bare := h.repo.Commit("feature/e", "e")
	h.out.validated(h.send(pr(92, "feature/e", "main", bare)))
	h.getJSON("/api/v1/repos/acme/widgets/statuses/"+bare, `{"sha":"`+bare+`","state":"pending","statuses":[]}`)
	h.do(http.MethodPut, "/api/v1/repos/acme/widgets/protection/main", "op-token", `{"required_contexts":["ci"]}`, http.StatusOK)
	h.out.failed(h.send(pr(93, "feature/e", "main", bare)), contracts.CodeChecksPending)
}

// TestMergedLogsOneLine: the merged event that marks a held PR merged
// also releases its lock — one change, one log line carrying the PR's ids,
// not a line for each half.
func TestMergedLogsOneLine(t *testing.T) {
	h, req := startGreenPR(t, 90, "feature/one-line", "one line")
	run := h.send(req)
	v := h.out.validated(run)
	h.follow(contracts.TypeMerged, contracts.ServiceMerger, 90, run, 1, contracts.Merged{Request: v.Request, MergeSHA: strings.Repeat("ef", 20)})
	h.waitLock(90, "merged and released", func(l validator.Lock) bool { return l.Merged && !l.Held() })

	const both = "pr marked merged, lock released"
	lines := h.logs.Wait(t, both, wait) // the line follows the commit
	if len(lines) != 1 || lines[0]["pr_id"] != req.PRID || lines[0]["correlation_id"] != run || lines[0]["holder"] != run {
		t.Fatalf("%q lines = %v; want one, for %s, run and holder %s", both, lines, req.PRID, run)
	}
	for _, half := range []string{"pr marked merged", "pr lock released"} {
		if got := h.logs.Find(t, half); len(got) != 0 {
			t.Errorf("%q logged as well: %v", half, got)
		}
	}
}
