package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/step"
)

// runCLIEnv runs the CLI with the given environment.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

// dlqCount is the number of messages in PRSAGA_DLQ.
func dlqCount(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return natstest.Msgs(t, ctx, b, contracts.DLQStream)
}

func waitDLQ(t *testing.T, b *bus.Bus, want uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for dlqCount(t, b) < want {
		if time.Now().After(deadline) {
			t.Fatalf("PRSAGA_DLQ holds %d messages, want %d", dlqCount(t, b), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDLQListShowRedrive: an undecodable request is dead-lettered by both
// of its consumers; `dlq list` and `dlq show` report it; a dead letter
// whose consumer has since been fixed (here: a valid request put in the
// DLQ as a buggy validator would have) is redriven — published to its
// subject again with a new Nats-Msg-Id and Prsaga-Redriven-From, deleted
// from the DLQ — and its saga reaches MERGED; redriving the undecodable
// one dead-letters it again: nothing is lost.
func TestDLQListShowRedrive(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startStack(t, cfg)
	env := map[string]string{"PRSAGA_NATS_URL": st.NATS.Addr()}
	ctx := context.Background()
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")

	if code, out, _ := runCLIEnv(t, env, "dlq", "list"); code != exitOK || !strings.Contains(out, "no dead letters") {
		t.Fatalf("dlq list on an empty DLQ = %d %q", code, out)
	}
	bad := &nats.Msg{Subject: contracts.SubjectMergeRequested, Data: []byte(`{not json`), Header: nats.Header{
		"ce-specversion": {"1.0"}, "ce-id": {"bad-1"}, "ce-source": {"https://forge.test"},
		"ce-type": {contracts.TypeMergeRequested}, "ce-subject": {"acme/widgets%2342"}, "Content-Type": {"application/json"},
		bus.HeaderMsgID: {"bad-1"},
	}}
	if _, err := st.Bus.PublishMsg(ctx, bad); err != nil {
		t.Fatal(err)
	}
	waitDLQ(t, st.Bus, 2) // validator and ledger both consume requested events

	code, out, errOut := runCLIEnv(t, env, "dlq", "list", "--json")
	if code != exitOK {
		t.Fatalf("dlq list --json = %d: %s", code, errOut)
	}
	var listed []struct {
		Seq                       uint64
		Time                      time.Time
		Consumer, Subject, Reason string
		EventID                   string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("dlq list --json: %v\n%s", err, out)
	}
	if len(listed) != 2 {
		t.Fatalf("dlq list --json listed %d, want 2:\n%s", len(listed), out)
	}
	consumers := map[string]bool{}
	for _, d := range listed {
		consumers[d.Consumer] = true
		if d.Seq == 0 || d.Time.IsZero() || d.Subject != contracts.SubjectMergeRequested || !strings.Contains(d.Reason, "data") {
			t.Errorf("listed %+v: want seq, time, original subject and a reason naming the data", d)
		}
	}
	if !consumers[contracts.ConsumerValidator] || !consumers[contracts.ConsumerLedger] {
		t.Errorf("dead letters of consumers %v, want validator and ledger", consumers)
	}
	code, out, _ = runCLIEnv(t, env, "dlq", "list")
	for _, want := range []string{"SEQ", "CONSUMER", "SUBJECT", "REASON", "validator", contracts.SubjectMergeRequested} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dlq list = %d, output lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = runCLIEnv(t, env, "dlq", "show", strconv.FormatUint(listed[0].Seq, 10))
	for _, want := range []string{"reason:", "ce-id: bad-1", contracts.DLQReasonHeader, "body:\n{not json"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dlq show = %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if code, _, _ := runCLIEnv(t, env, "dlq", "show", "999999"); code != exitFailed {
		t.Errorf("dlq show of a missing seq = %d, want %d", code, exitFailed)
	}

	// A valid request, dead-lettered as if by a validator that had a bug.
	r := request("acme/widgets", 42, "feature/hello", head)
	e, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), r, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(contracts.SubjectMergeRequested, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Bus.DeadLetter(ctx, contracts.ConsumerValidator, msg, "validator bug #123"); err != nil {
		t.Fatal(err)
	}
	waitDLQ(t, st.Bus, 3)
	code, out, _ = runCLIEnv(t, env, "dlq", "list", "--json", "--consumer", "validator")
	listed = nil
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil || len(listed) != 2 {
		t.Fatalf("dlq list --consumer validator = %d %v:\n%s", code, err, out)
	}
	seq := listed[1].Seq
	if listed[1].EventID != e.ID() || listed[1].Reason != "validator bug #123" {
		t.Fatalf("second validator dead letter %+v, want the valid request", listed[1])
	}
	code, out, errOut = runCLIEnv(t, env, "dlq", "redrive", strconv.FormatUint(seq, 10), "--json")
	var rd []struct {
		Seqs      []uint64 `json:"seqs"`
		Subject   string   `json:"subject"`
		MsgID     string   `json:"msg_id"`
		StreamSeq uint64   `json:"stream_seq"`
	}
	if err := json.Unmarshal([]byte(out), &rd); code != exitOK || err != nil || len(rd) != 1 {
		t.Fatalf("dlq redrive = %d %v: %s %s", code, err, out, errOut)
	}
	if rd[0].Subject != contracts.SubjectMergeRequested || rd[0].MsgID == e.ID() || !strings.Contains(rd[0].MsgID, e.ID()) {
		t.Errorf("redrive %+v: want the original subject and a new msg id naming %s", rd[0], e.ID())
	}
	s := waitTerminal(t, c, r.PRID)
	if s.State != "MERGED" || s.CorrelationID != e.ID() {
		t.Fatalf("redriven request: saga %s of run %s (%s), want MERGED of run %s", s.State, s.CorrelationID, s.LastError, e.ID())
	}
	// The record: the copy in PRSAGA names the dead letter it came from.
	sm, err := st.Bus.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sm.GetMsg(ctx, rd[0].StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Header.Get("Prsaga-Redriven-From"); got != contracts.DLQStream+":"+strconv.FormatUint(seq, 10) {
		t.Errorf("Prsaga-Redriven-From = %q", got)
	}
	if raw.Header.Get(contracts.DLQReasonHeader) != "" || raw.Header.Get("Prsaga-Redriven-Reason") != "validator bug #123" {
		t.Errorf("redriven headers %v: want the reason moved to Prsaga-Redriven-Reason", raw.Header)
	}
	if _, err := sm.GetMsg(ctx, rd[0].StreamSeq+1, jetstream.WithGetMsgSubject(contracts.SubjectMergeRequested)); err == nil {
		t.Errorf("a second copy of the request is in %s", contracts.Stream)
	}
	if n := dlqCount(t, st.Bus); n != 2 {
		t.Errorf("after the redrive PRSAGA_DLQ holds %d, want 2", n)
	}
	if code, _, _ := runCLIEnv(t, env, "dlq", "redrive", strconv.FormatUint(seq, 10)); code != exitFailed {
		t.Errorf("redriving a redriven dead letter again = %d, want %d", code, exitFailed)
	}

	// The undecodable one comes back: redriven, dead-lettered again by
	// both consumers.
	// Both dead letters are of one message: it is published once.
	if code, out, errOut := runCLIEnv(t, env, "dlq", "redrive", "--all"); code != exitOK || strings.Count(out, "redriven ") != 1 {
		t.Fatalf("dlq redrive --all = %d: %s %s", code, out, errOut)
	}
	waitDLQ(t, st.Bus, 2)
	// Nothing more is coming once every consumer has handled it.
	waitSettled(t, ctx, st.Bus)
	code, out, _ = runCLIEnv(t, env, "dlq", "list", "--json")
	listed = nil
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil || len(listed) != 2 {
		t.Fatalf("after redrive --all: %d %v\n%s", code, err, out)
	}
	for _, d := range listed {
		if d.EventID != "bad-1" || !strings.Contains(d.Reason, "data") {
			t.Errorf("dead letter after the redrive %+v, want bad-1 again with its reason", d)
		}
	}
	if code, _, _ := runCLIEnv(t, env, "dlq", "redrive"); code != exitUsage {
		t.Errorf("dlq redrive without seqs = %d, want usage", code)
	}
}
