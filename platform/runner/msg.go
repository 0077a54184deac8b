package runner

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/bus"
)

// natsMsg copies a consumed message for dead-lettering, making sure it has an
// id to dedupe on even when the publisher set none.
func natsMsg(m jetstream.Msg) *nats.Msg {
	h := nats.Header{}
	for k, v := range m.Headers() {
		h[k] = v
	}
	if h.Get(bus.HeaderMsgID) == "" {
		if md, err := m.Metadata(); err == nil {
			h.Set(bus.HeaderMsgID, fmt.Sprintf("seq%d", md.Sequence.Stream))
		}
	}
	return &nats.Msg{Subject: m.Subject(), Header: h, Data: m.Data()}
}
