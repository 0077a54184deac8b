package ledger_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
)

// saga_event keeps the whole CloudEvent in structured JSON: what is stored
// reads back as the very event json.Marshal would have written, text that
// needs escaping included.
func TestRecordedEventIsTheStructuredCloudEvent(t *testing.T) {
	f := newFixture(t)
	req := request("acme/widgets#7")
	req.Title = "Fix <script>&amp; \"quotes\" \\ \u2028 café \x01 🎉"
	req.RequestedBy = "o'brien <ob@example.com>"
	e, err := contracts.NewRequested(step.NewID(), "https://forge.test/acme?a=1&b=<2>", time.Now(), req, "ref-<&>")
	if err != nil {
		t.Fatal(err)
	}
	f.project(e)
	evs := f.events(req.PRID)
	if len(evs) != 1 {
		t.Fatalf("%d events recorded, want 1", len(evs))
	}
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp map[string]any
	if err := json.Unmarshal(evs[0].Event, &got); err != nil {
		t.Fatalf("stored event is not JSON: %v\n%s", err, evs[0].Event)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("stored event\n%s\nwant the same as\n%s", evs[0].Event, want)
	}
	back, err := evs[0].CloudEvent()
	if err != nil {
		t.Fatal(err)
	}
	var r contracts.Request
	if err := contracts.Decode(back, &r); err != nil || r != req {
		t.Errorf("payload read back as %+v (%v), want %+v", r, err, req)
	}
}
