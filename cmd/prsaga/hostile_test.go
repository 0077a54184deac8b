package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/dlq"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/step"
)

// outcome is where design §3 says a bad message ends.
type outcome int

const (
	toDLQ     outcome = iota // PRSAGA_DLQ, reason in Prsaga-Dlq-Reason
	toFailed                 // step_failed(VALIDATING, invalid_request), reason in the payload
	toHTTP4xx                // refused at the HTTP edge
)

func (o outcome) String() string {
	return [...]string{"PRSAGA_DLQ", "step_failed(VALIDATING, invalid_request)", "HTTP 4xx"}[o]
}

// hostileCase is one bad message: over NATS (msg) or over HTTP (req).
type hostileCase struct {
	name string
	want outcome
	// mention must appear in the reason (DLQ header, step_failed reason or
	// the HTTP answer's error): it names the problem.
	mention string
	msg     *nats.Msg
	req     func(base string) *http.Request
	msgID   string // Nats-Msg-Id (NATS cases), to find the dead letters
	eventID string // ce-id of a step_failed case
	pr      string // PR of a step_failed case
}

// hostileRequest is a request payload for PR acme/widgets#n, valid unless
// changed.
func hostileRequest(n int, head string) map[string]any {
	pr := "acme/widgets#" + strconv.Itoa(n)
	return map[string]any{"pr_id": pr, "repo": "acme/widgets", "pr_number": n, "source_branch": "feature/hello",
		"target_branch": "main", "head_sha": head, "strategy": "merge", "title": "hostile " + strconv.Itoa(n), "requested_by": "mallory"}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// binary builds a binary-mode message as a client would publish it; attrs
// override or (with "") remove ce- headers and others.
func binary(id, subject string, body []byte, attrs ...string) *nats.Msg {
	h := nats.Header{
		"ce-specversion": {"1.0"}, "ce-id": {id}, "ce-source": {"https://forge.test"},
		"ce-type": {contracts.TypeMergeRequested}, "ce-subject": {"acme/widgets#1"},
		"Content-Type": {"application/json"}, bus.HeaderMsgID: {id},
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i+1] == "" {
			delete(h, attrs[i])
		} else {
			h[attrs[i]] = []string{attrs[i+1]}
		}
	}
	return &nats.Msg{Subject: subject, Header: h, Data: body}
}

func structured(id string, body []byte, contentType string) *nats.Msg {
	return &nats.Msg{Subject: contracts.SubjectMergeRequested, Data: body,
		Header: nats.Header{"Content-Type": {contentType}, bus.HeaderMsgID: {id}}}
}

func hostileCases(head string) []hostileCase {
	const req = contracts.SubjectMergeRequested
	n := 100
	next := func() (int, string, string) {
		n++
		return n, "acme/widgets#" + strconv.Itoa(n), "hostile-" + strconv.Itoa(n)
	}
	var cs []hostileCase
	// Messages nobody can attribute to a saga: dead-lettered.
	dlq := func(name, mention string, build func(n int, pr, id string) *nats.Msg) {
		n, pr, id := next()
		cs = append(cs, hostileCase{name: name, want: toDLQ, mention: mention, msg: build(n, pr, id), msgID: id})
	}
	dlq("invalid JSON", "not a valid prsaga.merge.requested.v1 payload", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, []byte(`{"pr_id": "acme/widgets#1",`), "ce-subject", pr)
	})
	dlq("wrong specversion", "specversion", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-specversion", "0.3", "ce-subject", pr)
	})
	dlq("missing id", "id", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-id", "", "ce-subject", pr)
	})
	dlq("missing type", "type", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-type", "", "ce-subject", pr)
	})
	dlq("missing source", "source", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-source", "", "ce-subject", pr)
	})
	dlq("unknown type", "unknown event type", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-type", "prsaga.merge.exploded.v1", "ce-subject", pr)
	})
	dlq("oversize body", "exceeds", func(n int, pr, id string) *nats.Msg {
		big := with(hostileRequest(n, head), "padding", strings.Repeat("x", bus.MaxBody))
		return binary(id, req, mustJSON(big), "ce-subject", pr)
	})
	dlq("non-UTF-8 header", "UTF-8", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-subject", pr+"\xff")
	})
	dlq("non-UTF-8 structured body", "UTF-8", func(n int, pr, id string) *nats.Msg {
		return structured(id, []byte(`{"specversion":"1.0","id":"`+id+`","source":"https://f","type":"`+contracts.TypeMergeRequested+`","subject":"`+pr+"\xff\xfe"+`","data":{}}`), "application/cloudevents+json")
	})
	dlq("path traversal in repo", "repo", func(n int, pr, id string) *nats.Msg {
		bad := with(hostileRequest(n, head), "pr_id", "../../etc#1", "repo", "../../etc", "pr_number", 1)
		return binary(id, req, mustJSON(bad), "ce-subject", "../../etc#1")
	})
	dlq("negative PR number", "pr_number", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(with(hostileRequest(n, head), "pr_number", -n)), "ce-subject", pr)
	})
	dlq("negative PR number in pr_id", "pr_id", func(n int, pr, id string) *nats.Msg {
		bad := with(hostileRequest(n, head), "pr_id", "acme/widgets#-"+strconv.Itoa(n), "pr_number", -n)
		return binary(id, req, mustJSON(bad), "ce-subject", "acme/widgets#-"+strconv.Itoa(n))
	})
	dlq("huge array", "changed_paths", func(n int, pr, id string) *nats.Msg {
		paths := make([]string, contracts.MaxListItems+1)
		for i := range paths {
			paths[i] = "f" + strconv.Itoa(i)
		}
		merged := with(hostileRequest(n, head), "merge_sha", head, "changed_paths", paths)
		return binary(id, contracts.SubjectMerged, mustJSON(merged), "ce-type", contracts.TypeMerged, "ce-source", "/prsaga/merger",
			"ce-correlationid", "run-"+id, "ce-subject", pr)
	})
	dlq("wrong content type (binary)", "datacontenttype", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "Content-Type", "text/plain", "ce-datacontenttype", "text/plain", "ce-subject", pr)
	})
	dlq("wrong content type (structured)", "structured content type", func(n int, pr, id string) *nats.Msg {
		return structured(id, []byte(`<event/>`), "application/cloudevents+xml")
	})
	dlq("not a CloudEvent", "not a CloudEvent", func(n int, pr, id string) *nats.Msg {
		return &nats.Msg{Subject: req, Data: mustJSON(hostileRequest(n, head)), Header: nats.Header{bus.HeaderMsgID: {id}}}
	})
	dlq("step event from the wrong source", "which only /prsaga/merger publishes", func(n int, pr, id string) *nats.Msg {
		merged := with(hostileRequest(n, head), "merge_sha", head)
		return binary(id, contracts.SubjectMerged, mustJSON(merged), "ce-type", contracts.TypeMerged, "ce-source", "/prsaga/validator",
			"ce-correlationid", "run-"+id, "ce-subject", pr)
	})
	dlq("client-set replayof", "replayof", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-replayof", "orig-1", "ce-correlationid", "someone-elses-run", "ce-subject", pr)
	})
	dlq("subject names another PR", "subject", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-subject", "acme/widgets#1")
	})
	dlq("attempt out of range", "attempt", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-attempt", "99999", "ce-subject", pr)
	})
	dlq("step event without correlation id", "correlationid", func(n int, pr, id string) *nats.Msg {
		return binary(id, contracts.SubjectMerged, mustJSON(with(hostileRequest(n, head), "merge_sha", head)),
			"ce-type", contracts.TypeMerged, "ce-source", "/prsaga/merger", "ce-subject", pr)
	})
	dlq("data_base64", "data_base64", func(n int, pr, id string) *nats.Msg {
		return structured(id, []byte(`{"specversion":"1.0","id":"`+id+`","source":"https://f","type":"`+contracts.TypeMergeRequested+`","subject":"`+pr+`","data_base64":"e30="}`), "application/cloudevents+json")
	})
	dlq("bad id characters", "id", func(n int, pr, id string) *nats.Msg {
		return binary(id, req, mustJSON(hostileRequest(n, head)), "ce-id", "a b/../c", "ce-subject", pr)
	})

	// Requests naming a valid PR with other bad fields: answered.
	failed := func(name, mention string, change ...any) {
		n, pr, id := next()
		cs = append(cs, hostileCase{name: name, want: toFailed, mention: mention, msgID: id, eventID: id, pr: pr,
			msg: binary(id, req, mustJSON(with(hostileRequest(n, head), change...)), "ce-subject", pr)})
	}
	failed("'..' in the source branch", "source_branch", "source_branch", "feature/../../../HEAD")
	failed("control character in the target branch", "target_branch", "target_branch", "ma\x1bin")
	failed("invalid sha", "head_sha", "head_sha", "HEAD~1")
	failed("short sha", "head_sha", "head_sha", head[:12])
	failed("unknown strategy", "strategy", "strategy", "rebase")
	failed("escape sequence in the title", "title", "title", "\x1b]8;;http://evil.example\x07click")
	failed("missing requested_by", "requested_by", "requested_by", "")
	failed("branch is a reflog expression", "source_branch", "source_branch", "main@{1}")

	// Over HTTP: refused with a 4xx naming the problem.
	post := func(path, contentType string, body []byte, hdr ...string) func(string) *http.Request {
		return func(base string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
			if contentType != "" {
				r.Header.Set("Content-Type", contentType)
			}
			for i := 0; i+1 < len(hdr); i += 2 {
				r.Header.Set(hdr[i], hdr[i+1])
			}
			return r
		}
	}
	web := func(name, mention string, req func(string) *http.Request) {
		cs = append(cs, hostileCase{name: name, want: toHTTP4xx, mention: mention, req: req})
	}
	const mr = "/api/v1/merge-requests"
	web("HTTP: negative PR number", "pr_number", post(mr, "application/json", mustJSON(with(hostileRequest(200, head), "pr_number", -200))))
	web("HTTP: '..' in a branch", "source_branch", post(mr, "application/json", mustJSON(with(hostileRequest(201, head), "source_branch", "a/../b"))))
	web("HTTP: path traversal in repo", "repo", post(mr, "application/json", mustJSON(with(hostileRequest(202, head), "repo", "../..", "pr_id", "../..#202"))))
	web("HTTP: invalid JSON", "not valid JSON", post(mr, "application/json", []byte(`{"pr_id":`)))
	web("HTTP: wrong content type", "Content-Type", post(mr, "text/plain", mustJSON(hostileRequest(203, head))))
	web("HTTP: oversize body", "exceeds", post(mr, "application/json", mustJSON(with(hostileRequest(204, head), "pad", strings.Repeat("p", 2<<20)))))
	web("HTTP: client-set replayof", "replayof", post(mr, "application/json", mustJSON(hostileRequest(205, head)),
		"Ce-Specversion", "1.0", "Ce-Id", "h-205", "Ce-Source", "https://forge.test", "Ce-Type", contracts.TypeMergeRequested,
		"Ce-Subject", "acme/widgets#205", "Ce-Replayof", "orig-1", "Ce-Correlationid", "someone-elses-run"))
	web("HTTP: CloudEvent posing as the ledger", "source", post(mr, "application/json", mustJSON(hostileRequest(206, head)),
		"Ce-Specversion", "1.0", "Ce-Id", "h-206", "Ce-Source", "/prsaga/ledger", "Ce-Type", contracts.TypeMergeRequested, "Ce-Subject", "acme/widgets#206"))
	web("HTTP: status for an invalid sha", "sha", post("/api/v1/repos/acme/widgets/statuses/HEAD", "application/json", []byte(`{"context":"ci","state":"success"}`)))
	web("HTTP: watcher with a file URL", "scheme", func(base string) *http.Request {
		r, _ := http.NewRequest(http.MethodPut, base+"/api/v1/repos/acme/widgets/watchers", strings.NewReader(`[{"url":"file:///etc/passwd","secret":"12345678"}]`))
		r.Header.Set("Content-Type", "application/json")
		return r
	})
	return cs
}

// TestHostileInput publishes dozens of kinds of bad message to the real
// stack and checks each ends where design §3 says — PRSAGA_DLQ,
// step_failed(VALIDATING, invalid_request) or a 4xx — with a reason naming
// the problem; that a valid request sent after them still merges; and that
// a duplicate event id with another body changes nothing (the first body
// wins), whether JetStream's dedupe or the consumers' inboxes catch it.
func TestHostileInput(t *testing.T) {
	cfg := testConfig(t)
	bare, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startStack(t, cfg)
	ctx := context.Background()
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")
	cases := hostileCases(head)
	if len(cases) < 20 {
		t.Fatalf("%d cases, want at least 20", len(cases))
	}
	for _, tc := range cases {
		if tc.msg != nil {
			if _, err := st.Bus.PublishMsg(ctx, tc.msg); err != nil {
				t.Fatalf("%s: publish: %v", tc.name, err)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case gets its own budget: one shared by all of them ran
			// out on a loaded machine while the later cases were still
			// being answered (the answers arrive in publish order).
			deadline := time.Now().Add(30 * time.Second)
			switch tc.want {
			case toDLQ:
				checkDeadLettered(t, st.Bus, tc, deadline)
			case toFailed:
				checkInvalidRequest(t, st.Bus, c, tc, deadline)
			case toHTTP4xx:
				checkRefused(t, st.URL, tc)
			}
		})
	}

	// The DLQ count reaches the operator.
	var stats struct {
		DLQ *uint64 `json:"dlq_messages"`
	}
	getJSON(t, st.URL+"/api/v1/stats", &stats)
	if stats.DLQ == nil || *stats.DLQ < 20 {
		t.Errorf("stats dlq_messages = %v, want the dead letters counted", stats.DLQ)
	}

	// A valid request after all that merges; a second body under its id
	// changes nothing — whether JetStream's dedupe window drops it at
	// publish, or (published later, past the window) the consumers' inboxes
	// drop it.
	r := request("acme/widgets", 42, "feature/hello", head)
	id := step.NewID()
	publishRequest(ctx, t, st.Bus, id, "https://forge.test", r)
	other := r
	other.PRID, other.PRNumber, other.Title = "acme/widgets#43", 43, "the second body"
	second, err := contracts.NewRequested(id, "https://forge.test", time.Now(), other, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(contracts.SubjectMergeRequested, second)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := st.Bus.PublishMsg(ctx, msg)
	if err != nil || !ack.Duplicate {
		t.Errorf("same id, other body: JetStream ack %+v, %v; want a duplicate", ack, err)
	}
	s := waitTerminal(t, c, r.PRID)
	if s.State != "MERGED" || s.CorrelationID != id {
		t.Fatalf("the valid request after the hostile ones: %s (%s), want MERGED of run %s", s.State, s.LastError, id)
	}
	// As if the dedupe window had passed: another message id.
	msg.Header.Set(bus.HeaderMsgID, id+"-later")
	if ack, err := st.Bus.PublishMsg(ctx, msg); err != nil || ack.Duplicate {
		t.Fatalf("publish past the dedupe window: %+v %v", ack, err)
	}
	waitSettled(t, ctx, st.Bus)
	commits := gittest.Run(t, bare, "log", "--format=%H %s", "--grep", "Prsaga-PR:", "main")
	if strings.Count(commits, "\n") != 0 || !strings.HasPrefix(commits, s.MergeSHA) {
		t.Errorf("PR commits on main: %q, want exactly the merge of #42", commits)
	}
	// The second body reached the consumers (it is in the stream) and was
	// dropped by id: no saga of #43, no answer to it, and #42's recorded
	// request is the first.
	if _, err := c.Saga(ctx, "acme/widgets#43"); err == nil {
		t.Error("the second body under a used id created a saga for #43")
	}
	var evs struct {
		Events []struct {
			EventID string          `json:"event_id"`
			Type    string          `json:"type"`
			Event   json.RawMessage `json:"event"`
		} `json:"events"`
	}
	getJSON(t, st.URL+"/api/v1/sagas/acme%2Fwidgets%2342/events", &evs)
	requests := 0
	for _, e := range evs.Events {
		if e.Type == contracts.TypeMergeRequested {
			requests++
			if e.EventID != id || bytes.Contains(e.Event, []byte("the second body")) {
				t.Errorf("recorded request %s: %s", e.EventID, e.Event)
			}
		}
	}
	if requests != 1 {
		t.Errorf("#42 recorded %d requested events, want 1", requests)
	}
	if n := len(streamEvents(t, st.Bus, contracts.SubjectStepFailedAny, "acme/widgets#43")); n != 0 {
		t.Errorf("the validator answered the second body %d times", n)
	}
}

// TestDuplicateIDInFlightTogether publishes pairs of requests that share
// an event id but not a body, back to back and each with its own
// Nats-Msg-Id (a client that bypasses JetStream's dedupe, or reuses an id
// after the window while the first copy is still being handled). The
// first body must win everywhere: the validator (four workers) and the
// ledger (one, in stream order) alike. The runner handles the copies of
// one id one after the other, in delivery order, so the second finds the
// id in the inbox and is dropped.
func TestDuplicateIDInFlightTogether(t *testing.T) {
	cfg := testConfig(t)
	reposDir := cfg.ReposDir
	const pairs = 10
	heads := map[int]string{}
	for i := 0; i < pairs; i++ {
		_, heads[i] = makeRepo(t, reposDir, "dup/r"+strconv.Itoa(i), "feature/x")
	}
	st := startStack(t, cfg)
	ctx := context.Background()
	c := client.New(st.URL, "")
	for i := 0; i < pairs; i++ {
		setCI(t, c, "dup/r"+strconv.Itoa(i), heads[i], "success")
	}
	ids := map[int]string{}
	for i := 0; i < pairs; i++ {
		repo := "dup/r" + strconv.Itoa(i)
		ids[i] = step.NewID()
		for k, n := range []int{1, 2} { // the first body, then the second under the same id
			e, err := contracts.NewRequested(ids[i], "https://forge.test", time.Now(), request(repo, n, "feature/x", heads[i]), "")
			if err != nil {
				t.Fatal(err)
			}
			msg, err := bus.Encode(contracts.SubjectMergeRequested, e)
			if err != nil {
				t.Fatal(err)
			}
			msg.Header.Set(bus.HeaderMsgID, ids[i]+"-"+strconv.Itoa(k))
			if _, err := st.Bus.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < pairs; i++ {
		pr := "dup/r" + strconv.Itoa(i) + "#1"
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		s, err := c.Wait(wctx, pr, ids[i])
		cancel()
		if err != nil || s.State != "MERGED" {
			t.Errorf("%s (the first body): %s %v, want MERGED", pr, s.State, err)
		}
		if _, err := c.Saga(ctx, "dup/r"+strconv.Itoa(i)+"#2"); err == nil {
			t.Errorf("the second body of id %s created a saga for #2", ids[i])
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// checkDeadLettered waits for the case's dead letters: one per consumer of
// its subject, each with a reason naming the problem, the original body
// kept.
func checkDeadLettered(t *testing.T, b *bus.Bus, tc hostileCase, deadline time.Time) {
	t.Helper()
	want := 2 // requested: validator and ledger
	if tc.msg.Subject == contracts.SubjectMerged {
		want = 3 // merged: notifier, ledger and the validator's lock consumer
	}
	var got []dlq.Letter
	for {
		ds, err := dlq.New(b).Scan(context.Background(), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, d := range ds {
			if strings.HasSuffix(d.Header.Get(bus.HeaderMsgID), "."+tc.msgID) {
				got = append(got, d)
			}
		}
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != want {
		t.Fatalf("%d dead letters, want %d (one per consumer of %s)", len(got), want, tc.msg.Subject)
	}
	for _, d := range got {
		t.Logf("%s: %s", d.Consumer, d.Reason)
		if !strings.Contains(d.Reason, tc.mention) {
			t.Errorf("%s's reason %q does not mention %q", d.Consumer, d.Reason, tc.mention)
		}
		if d.Subject != tc.msg.Subject || !bytes.Equal(d.Data, tc.msg.Data) {
			t.Errorf("%s's dead letter lost the original (subject %q, %d bytes)", d.Consumer, d.Subject, len(d.Data))
		}
	}
}

// checkInvalidRequest waits for the validator's step_failed(VALIDATING,
// invalid_request) answering the case's request, and the ledger's saga
// failed at VALIDATING with that reason.
func checkInvalidRequest(t *testing.T, b *bus.Bus, c *client.Client, tc hostileCase, deadline time.Time) {
	t.Helper()
	var f *contracts.StepFailed
	for f == nil {
		for _, env := range streamEvents(t, b, contracts.SubjectStepFailedAny, tc.pr) {
			if env.Meta.CausationID == tc.eventID {
				f = env.Payload.(*contracts.StepFailed)
			}
		}
		if f == nil && time.Now().After(deadline) {
			t.Fatal("no step_failed answered the request")
		}
	}
	if f.Step != contracts.StateValidating || f.Code != contracts.CodeInvalidRequest || f.Retryable {
		t.Errorf("answered step_failed(%s, %s, retryable=%v), want (VALIDATING, invalid_request, false)", f.Step, f.Code, f.Retryable)
	}
	t.Logf("validator: %s", f.Reason)
	if !strings.Contains(f.Reason, tc.mention) {
		t.Errorf("reason %q does not mention %q", f.Reason, tc.mention)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	s, err := c.Wait(ctx, tc.pr, tc.eventID)
	if err != nil {
		t.Fatalf("saga: %v", err)
	}
	if s.State != "MERGE_FAILED" || s.FailedStep != "VALIDATING" || !strings.Contains(s.LastError, contracts.CodeInvalidRequest) || s.Merged {
		t.Errorf("saga %s at %s (%q), want MERGE_FAILED at VALIDATING with invalid_request", s.State, s.FailedStep, s.LastError)
	}
}

func checkRefused(t *testing.T, base string, tc hostileCase) {
	t.Helper()
	resp, err := http.DefaultClient.Do(tc.req(base))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e struct{ Error string }
	_ = json.Unmarshal(raw, &e)
	t.Logf("%d: %s", resp.StatusCode, e.Error)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(e.Error, tc.mention) {
		t.Errorf("answered %d %s, want a 4xx whose error mentions %q", resp.StatusCode, raw, tc.mention)
	}
}
