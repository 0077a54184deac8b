package telemetry

import "github.com/prsaga/prsaga/contracts"

// traceCarrier is the W3C trace context of one event (its traceparent and
// tracestate extensions) for propagation.TraceContext: what a
// propagation.MapCarrier held, without a map per message handled.
type traceCarrier struct{ parent, state string }

func (c *traceCarrier) Get(key string) string {
	switch key {
	case contracts.ExtTraceParent:
		return c.parent
	case contracts.ExtTraceState:
		return c.state
	}
	return ""
}

func (c *traceCarrier) Set(key, value string) {
	switch key {
	case contracts.ExtTraceParent:
		c.parent = value
	case contracts.ExtTraceState:
		c.state = value
	}
}

func (c *traceCarrier) Keys() []string {
	return []string{contracts.ExtTraceParent, contracts.ExtTraceState}
}
