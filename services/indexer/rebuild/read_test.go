package rebuild

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// msg is a message as the stream hands it over: only its headers and data
// are read by open.
type msg struct {
	jetstream.Msg
	h    nats.Header
	data []byte
}

func (m msg) Headers() nats.Header { return m.h }
func (m msg) Data() []byte         { return m.data }

func encoded(t *testing.T, e *event.Event) msg {
	t.Helper()
	subject, _ := contracts.SubjectFor(e.Type())
	m, err := bus.Encode(subject, e)
	if err != nil {
		t.Fatal(err)
	}
	return msg{h: m.Header, data: m.Data}
}

// TestOpenSkips pins what a rebuild takes and why it skips the rest: the
// checks the indexer's consumer makes (decode, contract, payload), the
// event type checked before the payload, so that another event type on the
// notified subject is not_notified whether or not its payload is valid.
func TestOpenSkips(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	r := contracts.Request{PRID: "acme/widgets#42", Repo: "acme/widgets", PRNumber: 42, SourceBranch: "feature/x",
		TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Strategy: contracts.StrategyMerge, Title: "t", RequestedBy: "alice"}
	sha := strings.Repeat("b", 40)
	req, err := contracts.NewRequested("req-1", "https://forge.example", at, r, "")
	if err != nil {
		t.Fatal(err)
	}
	follow := func(id, typ, svc string, p any) *event.Event {
		t.Helper()
		e, err := contracts.Follow(req, id, typ, svc, at, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	badReq := r
	badReq.HeadSHA = "HEAD"
	badRequest, err := contracts.NewRequested("req-2", "https://forge.example", at, badReq, "")
	if err != nil {
		t.Fatal(err)
	}
	notified := encoded(t, follow("n-1", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: sha}))
	wrongSubject := encoded(t, follow("n-2", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: sha}))
	wrongSubject.h.Set("ce-subject", "acme/widgets#43")
	for _, tc := range []struct {
		name string
		m    msg
		want string // the skip reason; "" when taken
	}{
		{"notified", notified, ""},
		{"not a CloudEvent", msg{h: nats.Header{}, data: []byte("hello")}, SkipUndecodable},
		{"subject is not the pr id", wrongSubject, SkipInvalidEvent},
		{"notified without merge sha", encoded(t, follow("n-3", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r})), SkipInvalidPayload},
		{"indexed", encoded(t, follow("i-1", contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: sha})), SkipNotNotified},
		{"merged without merge sha", encoded(t, follow("m-1", contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r})), SkipNotNotified},
		{"invalid request", encoded(t, badRequest), SkipNotNotified},
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
