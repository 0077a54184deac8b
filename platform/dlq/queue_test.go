package dlq_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/dlq"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
)

// requested is a merge request with event id id, encoded as a relay
// publishes it.
func requested(t *testing.T, id string) *nats.Msg {
	t.Helper()
	r := contracts.Request{PRID: "acme/widgets#1", Repo: "acme/widgets", PRNumber: 1, SourceBranch: "feature",
		TargetBranch: "main", HeadSHA: "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a", Strategy: contracts.StrategyMerge, RequestedBy: "alice"}
	e, err := contracts.NewRequested(id, "https://forge.test", time.Now(), r, "")
	if err != nil {
		t.Fatalf("build requested %s: %v", id, err)
	}
	m, err := bus.Encode(contracts.SubjectMergeRequested, e)
	if err != nil {
		t.Fatalf("encode requested %s: %v", id, err)
	}
	return m
}

// deadLetter has consumer dead-letter m, as the runner does.
func deadLetter(t *testing.T, b *bus.Bus, consumer string, m *nats.Msg, reason string) {
	t.Helper()
	if err := b.DeadLetter(t.Context(), consumer, m, reason); err != nil {
		t.Fatalf("dead-letter by %s: %v", consumer, err)
	}
}

// seqs are the letters' sequence numbers, in order.
func seqs(ls []dlq.Letter) []uint64 {
	var out []uint64
	for _, l := range ls {
		out = append(out, l.Seq)
	}
	return out
}

func TestScanAndGet(t *testing.T) {
	ctx := t.Context() // each JetStream call has its own timeout
	_, b := natstest.Start(t, bus.Config{})
	q := dlq.New(b)
	if ls, err := q.Scan(ctx, "", 0); err != nil || len(ls) != 0 {
		t.Fatalf("Scan of an empty DLQ = %v, %v; want nothing", seqs(ls), err)
	}
	req1, req2 := requested(t, "req-1"), requested(t, "req-2")
	deadLetter(t, b, contracts.ConsumerValidator, req1, "pr_id is bad")
	deadLetter(t, b, contracts.ConsumerLedger, req1, "pr_id is bad too")
	deadLetter(t, b, contracts.ConsumerValidator, req2, "repo is bad")

	all, err := q.Scan(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs(all), []uint64{1, 2, 3}) {
		t.Fatalf("Scan all: seqs %v, want [1 2 3]", seqs(all))
	}
	l := all[1]
	if l.Consumer != contracts.ConsumerLedger || l.Subject != contracts.SubjectMergeRequested || l.Reason != "pr_id is bad too" ||
		l.EventID != "req-1" || l.EventType != contracts.TypeMergeRequested || l.Time.IsZero() || l.Time.Location() != time.UTC {
		t.Errorf("Scan all [1] = %+v, want the ledger's dead letter of req-1 with its reason, in UTC", l)
	}
	if string(l.Data) != string(req1.Data) || l.Header.Get(contracts.DLQReasonHeader) != l.Reason {
		t.Errorf("Scan all [1]: body %q, headers %v; want the original body and the dead-letter headers", l.Data, l.Header)
	}
	cases := []struct {
		consumer string
		limit    int
		want     []uint64
	}{
		{contracts.ConsumerValidator, 0, []uint64{1, 3}},
		{contracts.ConsumerLedger, 0, []uint64{2}},
		{contracts.ConsumerMerger, 0, nil},
		{"", 2, []uint64{1, 2}},
		{contracts.ConsumerValidator, 1, []uint64{1}},
	}
	for _, c := range cases {
		ls, err := q.Scan(ctx, c.consumer, c.limit)
		if err != nil || !slices.Equal(seqs(ls), c.want) {
			t.Errorf("Scan(%q, %d) = %v, %v; want %v", c.consumer, c.limit, seqs(ls), err, c.want)
		}
	}
	for _, bad := range []string{"validator.x", "*", ">", "Validator"} {
		if ls, err := q.Scan(ctx, bad, 0); err == nil {
			t.Errorf("Scan(%q) = %v, want an error: not a consumer name", bad, seqs(ls))
		}
	}

	got, err := q.Get(ctx, 3)
	if err != nil || got.Seq != 3 || got.EventID != "req-2" || got.Reason != "repo is bad" {
		t.Errorf("Get(3) = %+v, %v; want the dead letter of req-2", got, err)
	}
	_, err = q.Get(ctx, 99)
	if !errors.Is(err, dlq.ErrNotFound) || err.Error() != "no dead letter 99 (redriven already, or never there)" {
		t.Errorf("Get(99) error = %v, want ErrNotFound naming 99", err)
	}
}

// A dead letter whose headers hold no ce-id (not a CloudEvent) is still
// listed, with no event id.
func TestScanNotACloudEvent(t *testing.T) {
	ctx := t.Context() // each JetStream call has its own timeout
	_, b := natstest.Start(t, bus.Config{})
	deadLetter(t, b, contracts.ConsumerMerger, &nats.Msg{Subject: contracts.SubjectMerged, Data: []byte{0xff, 0xfe}}, "not a CloudEvent")
	ls, err := dlq.New(b).Scan(ctx, "", 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Scan = %v, %v; want one dead letter", seqs(ls), err)
	}
	if l := ls[0]; l.EventID != "" || l.EventType != "" || l.Subject != contracts.SubjectMerged || string(l.Data) != "\xff\xfe" {
		t.Errorf("dead letter %+v, want no event id or type, the original subject and body", l)
	}
}
