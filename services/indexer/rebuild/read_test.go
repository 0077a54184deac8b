package rebuild

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// msg is a message as the stream hands it over: open reads only its
// headers and data.
type msg struct {
	jetstream.Msg
	subject string
	h       nats.Header
	data    []byte
}

func (m msg) Subject() string      { return m.subject }
func (m msg) Headers() nats.Header { return m.h }
func (m msg) Data() []byte         { return m.data }

// TestOpenSkips pins what a rebuild takes and why it skips the rest: the
// checks the indexer's consumer makes (decode, contract and route,
// payload), the event type checked before the payload, so that an event of
// another type is not_notified whether or not its payload is valid.
func TestOpenSkips(t *testing.T) {
	r := contracts.Request{PRID: "acme/widgets#42", Repo: "acme/widgets", PRNumber: 42, SourceBranch: "feature/x",
		TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Strategy: contracts.StrategyMerge, Title: "t", RequestedBy: "alice"}
	badRequest, sha := r, strings.Repeat("b", 40)
	badRequest.HeadSHA = "HEAD"
	// stored is event id of type typ, from its producer, as the stream
	// holds it.
	stored := func(id, typ, producer string, payload any) msg {
		t.Helper()
		source, meta := contracts.Source(producer), contracts.Meta{CorrelationID: "c-1", Attempt: 1}
		if typ == contracts.TypeMergeRequested {
			source, meta.CorrelationID = "https://forge.example", id
		}
		e, err := contracts.New(id, typ, source, r.PRID, time.Unix(1e9, 0), payload, meta)
		if err != nil {
			t.Fatal(err)
		}
		subject, err := contracts.SubjectOf(e)
		if err != nil {
			t.Fatal(err)
		}
		m, err := bus.Encode(subject, e)
		if err != nil {
			t.Fatal(err)
		}
		return msg{subject: subject, h: m.Header, data: m.Data}
	}
	wrongSubject := stored("n-2", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: sha})
	wrongSubject.h.Set("ce-subject", "acme/widgets#43")
	misrouted := stored("i-2", contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: sha})
	misrouted.subject = contracts.SubjectNotified
	for _, tc := range []struct {
		name string
		m    msg
		want string // the skip reason; "" when taken
	}{
		{"notified", stored("n-1", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: sha}), ""},
		{"not a CloudEvent", msg{subject: contracts.SubjectNotified, h: nats.Header{}, data: []byte("hello")}, SkipUndecodable},
		{"indexed on the notified subject", misrouted, SkipInvalidEvent},
		{"subject is not the pr id", wrongSubject, SkipInvalidEvent},
		{"notified without merge sha", stored("n-3", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r}), SkipInvalidPayload},
		{"indexed", stored("i-1", contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: sha}), SkipNotNotified},
		{"merged without merge sha", stored("m-1", contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r}), SkipNotNotified},
		{"invalid request", stored("req-2", contracts.TypeMergeRequested, "", badRequest), SkipNotNotified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := open(tc.m)
			s, skipped := asSkipped(err)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("open = %v; want the event taken", err)
			case tc.want == "" && env.Req().PRID != r.PRID:
				t.Fatalf("open took an envelope of %q; want %q", env.Req().PRID, r.PRID)
			case tc.want != "" && !skipped:
				t.Fatalf("open = %v; want skipped as %s", err, tc.want)
			case tc.want != "" && s.reason != tc.want:
				t.Fatalf("open skipped it as %s (%v); want %s", s.reason, err, tc.want)
			}
		})
	}
}
