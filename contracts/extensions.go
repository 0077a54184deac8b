package contracts

import "github.com/cloudevents/sdk-go/v2/event"

// Extensions returns an event's extensions for reading: event.Extensions
// copies the map on every call (several times per message: decoding,
// MetaOf, encoding), this returns the event's own. The caller must not
// change it.
func Extensions(e *event.Event) map[string]any {
	if c, ok := e.Context.(*event.EventContextV1); ok {
		return c.Extensions
	}
	return e.Extensions()
}
