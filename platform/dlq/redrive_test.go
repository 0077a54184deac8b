package dlq_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/dlq"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
)

func ids(os []dlq.Original) []string {
	var out []string
	for _, o := range os {
		var s []string
		for _, l := range o.Letters {
			s = append(s, l.Consumer)
		}
		out = append(out, o.ID+"("+strings.Join(s, ",")+")")
	}
	return out
}

// TestPlan: a selection redrives whole originals — every dead letter of
// a message, whichever consumers left them — each once, oldest first.
func TestPlan(t *testing.T) {
	ctx := t.Context()
	_, b := natstest.Start(t, bus.Config{})
	req1, req2, req3 := requested(t, "req-1"), requested(t, "req-2"), requested(t, "req-3")
	deadLetter(t, b, contracts.ConsumerValidator, req1, "bad") // 1
	deadLetter(t, b, contracts.ConsumerLedger, req2, "bad")    // 2
	deadLetter(t, b, contracts.ConsumerLedger, req1, "bad")    // 3
	deadLetter(t, b, contracts.ConsumerValidator, req3, "bad") // 4
	q := dlq.New(b)
	cases := []struct {
		name string
		sel  dlq.Selection
		want string
	}{
		{"all", dlq.Selection{All: true}, "req-1(validator,ledger) req-2(ledger) req-3(validator)"},
		{"all of a consumer", dlq.Selection{All: true, Consumer: contracts.ConsumerValidator}, "req-1(validator,ledger) req-3(validator)"},
		{"one seq brings its original's other dead letters", dlq.Selection{Seqs: []uint64{3}}, "req-1(validator,ledger)"},
		{"two seqs of one original: once", dlq.Selection{Seqs: []uint64{3, 1}}, "req-1(validator,ledger)"},
		{"seqs in the order given", dlq.Selection{Seqs: []uint64{4, 2}}, "req-3(validator) req-2(ledger)"},
		{"nothing", dlq.Selection{}, ""},
	}
	for _, c := range cases {
		os, err := q.Plan(ctx, c.sel)
		if got := strings.Join(ids(os), " "); err != nil || got != c.want {
			t.Errorf("%s: Plan = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	_, err := q.Plan(ctx, dlq.Selection{Seqs: []uint64{1, 5}})
	if !errors.Is(err, dlq.ErrNotFound) || !strings.Contains(err.Error(), " 5 ") {
		t.Errorf("Plan with a missing seq: %v, want ErrNotFound naming 5", err)
	}
}

// TestRedrive: the original goes back to its subject once, with a new
// Nats-Msg-Id and the record of the redrive instead of the dead-letter
// headers, and its dead letters leave the DLQ.
func TestRedrive(t *testing.T) {
	ctx := t.Context()
	_, b := natstest.Start(t, bus.Config{})
	orig := requested(t, "req-1")
	// A message redriven before and dead-lettered again: the old record
	// gives way to the new one, however its headers are spelt.
	orig.Header["prsaga-redriven-from"] = []string{contracts.DLQStream + ":77"}
	orig.Header.Set(contracts.RedrivenReasonHeader, "an older reason")
	deadLetter(t, b, contracts.ConsumerValidator, orig, "validator bug #1")
	deadLetter(t, b, contracts.ConsumerLedger, orig, "ledger bug #2")
	q := dlq.New(b)
	os, err := q.Plan(ctx, dlq.Selection{Seqs: []uint64{2}})
	if err != nil || len(os) != 1 {
		t.Fatalf("Plan = %v, %v", ids(os), err)
	}
	r, err := q.Redrive(ctx, os[0])
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	want := dlq.Redriven{Seqs: []uint64{1, 2}, Subject: contracts.SubjectMergeRequested, MsgID: "redrive.1.req-1", StreamSeq: 1}
	if !slices.Equal(r.Seqs, want.Seqs) || r.Subject != want.Subject || r.MsgID != want.MsgID || r.StreamSeq != want.StreamSeq || r.Duplicate {
		t.Errorf("Redrive = %+v, want %+v", r, want)
	}
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, r.StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != contracts.SubjectMergeRequested || string(m.Data) != string(orig.Data) {
		t.Errorf("redriven message on %s with body %q, want the original's subject and body", m.Subject, m.Data)
	}
	for k, want := range map[string]string{
		bus.HeaderMsgID:                "redrive.1.req-1",
		contracts.RedrivenFromHeader:   "PRSAGA_DLQ:1,2",
		contracts.RedrivenReasonHeader: "validator bug #1",
		contracts.DLQReasonHeader:      "",
		contracts.DLQSubjectHeader:     "",
		"ce-id":                        "req-1",
	} {
		if got := m.Header.Values(k); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("redriven header %s = %q, want %q", k, got, want)
		}
	}
	if old := m.Header["prsaga-redriven-from"]; old != nil {
		t.Errorf("redriven message keeps the old record %q", old)
	}
	if _, err := bus.Decode(m.Header, m.Data); err != nil {
		t.Errorf("the redriven message no longer decodes: %v", err)
	}
	if ls, err := q.Scan(ctx, "", 0); err != nil || len(ls) != 0 {
		t.Errorf("DLQ after the redrive: %v, %v; want empty", seqs(ls), err)
	}
	if _, err := q.Plan(ctx, dlq.Selection{Seqs: []uint64{1}}); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Plan of a redriven dead letter: %v, want ErrNotFound", err)
	}
}

// TestRedriveAgainAfterACrash: a redrive interrupted after the publish
// (its dead letters still in the DLQ) and repeated publishes nothing new.
func TestRedriveAgainAfterACrash(t *testing.T) {
	ctx := t.Context()
	_, b := natstest.Start(t, bus.Config{})
	deadLetter(t, b, contracts.ConsumerValidator, requested(t, "req-1"), "bug")
	q := dlq.New(b)
	os, err := q.Plan(ctx, dlq.Selection{All: true})
	if err != nil || len(os) != 1 {
		t.Fatalf("Plan = %v, %v", ids(os), err)
	}
	// What the crashed redrive had published before it could delete.
	first := os[0].Letters[0]
	h := nats.Header{bus.HeaderMsgID: {"redrive.1.req-1"}, "ce-id": {"req-1"}}
	if _, err := b.PublishMsg(ctx, &nats.Msg{Subject: first.Subject, Header: h, Data: first.Data}); err != nil {
		t.Fatal(err)
	}
	r, err := q.Redrive(ctx, os[0])
	if err != nil || !r.Duplicate || r.StreamSeq != 1 {
		t.Fatalf("Redrive after a crash = %+v, %v; want a duplicate of stream seq 1", r, err)
	}
	if n := natstest.Msgs(t, ctx, b, contracts.Stream); n != 1 {
		t.Errorf("PRSAGA holds %d messages, want the one copy", n)
	}
	if ls, _ := q.Scan(ctx, "", 0); len(ls) != 0 {
		t.Errorf("DLQ after the repeated redrive: %v, want empty", seqs(ls))
	}
	// A stale plan redriven again: still one copy, and the error says
	// the dead letters could not be deleted.
	r, err = q.Redrive(ctx, os[0])
	if err == nil || !r.Duplicate || !strings.Contains(err.Error(), "not deleted") {
		t.Errorf("Redrive of a stale plan = %+v, %v; want a duplicate and an error", r, err)
	}
}

// TestRedriveRefusesForeignSubjects: a dead letter whose original subject
// is not one of stream PRSAGA's is not published anywhere and stays.
func TestRedriveRefusesForeignSubjects(t *testing.T) {
	ctx := t.Context()
	_, b := natstest.Start(t, bus.Config{})
	for _, subj := range []string{"elsewhere.thing", "prsaga.merge.", "prsaga.dlq.validator"} {
		deadLetter(t, b, contracts.ConsumerValidator, &nats.Msg{Subject: subj, Data: []byte(subj),
			Header: nats.Header{bus.HeaderMsgID: {subj}}}, "bad")
	}
	q := dlq.New(b)
	os, err := q.Plan(ctx, dlq.Selection{All: true})
	if err != nil || len(os) != 3 {
		t.Fatalf("Plan = %v, %v; want 3 originals", ids(os), err)
	}
	for _, o := range os {
		r, err := q.Redrive(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "is not one of stream PRSAGA's") || r.MsgID != "" || r.StreamSeq != 0 {
			t.Errorf("Redrive of %q = %+v, %v; want a refusal", o.Subject, r, err)
		}
	}
	if ls, _ := q.Scan(ctx, "", 0); len(ls) != 3 {
		t.Errorf("DLQ after refused redrives holds %v, want all 3", seqs(ls))
	}
	if n := natstest.Msgs(t, ctx, b, contracts.Stream); n != 0 {
		t.Errorf("PRSAGA after refused redrives holds %d messages, want none", n)
	}
}

// TestRedriveWithoutMsgID: a dead letter put in the DLQ without a
// Nats-Msg-Id (not by bus.DeadLetter) is redriven under the id "none".
func TestRedriveWithoutMsgID(t *testing.T) {
	ctx := t.Context()
	_, b := natstest.Start(t, bus.Config{})
	m := requested(t, "req-1")
	m.Subject = contracts.DLQSubject(contracts.ConsumerValidator)
	m.Header.Del(bus.HeaderMsgID)
	m.Header.Set(contracts.DLQSubjectHeader, contracts.SubjectMergeRequested)
	if _, err := b.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	q := dlq.New(b)
	os, err := q.Plan(ctx, dlq.Selection{Seqs: []uint64{1}})
	if err != nil || len(os) != 1 || os[0].ID != "none" {
		t.Fatalf("Plan = %v, %v; want one original with id none", ids(os), err)
	}
	r, err := q.Redrive(ctx, os[0])
	if err != nil || r.MsgID != "redrive.1.none" {
		t.Errorf("Redrive = %+v, %v; want msg id redrive.1.none", r, err)
	}
	if _, err := q.Redrive(ctx, dlq.Original{Subject: contracts.SubjectMergeRequested}); err == nil {
		t.Error("Redrive of an original without dead letters: no error")
	}
}
