package contracts_test

import (
	"reflect"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// Extensions reads what event.Extensions copies, for every spec version.
func TestExtensionsAreTheEventsOwn(t *testing.T) {
	for _, v := range []string{event.CloudEventsVersionV1, event.CloudEventsVersionV03} {
		e := event.New(v)
		e.SetID("e-1")
		e.SetExtension(contracts.ExtCorrelationID, "c-1")
		e.SetExtension(contracts.ExtAttempt, 2)
		if got, want := contracts.Extensions(&e), e.Extensions(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Extensions = %v, want %v", v, got, want)
		}
	}
	e := event.New()
	if got := contracts.Extensions(&e); len(got) != 0 {
		t.Errorf("no extensions: got %v", got)
	}
}
