// Package telemetry is one process's (one stack's) metrics and traces: a
// Prometheus registry of its own — never the global default one, so that
// tests can run several stacks side by side — holding the saga metrics of
// design §2 and the issue "follow one merge", and an OpenTelemetry tracer
// provider per service.
//
// Traces follow a saga across services through the CloudEvents
// Distributed Tracing extension (W3C traceparent/tracestate): the runner
// starts one span per handled event, a child of the span the event's
// traceparent names, and hands the handler an envelope whose traceparent
// is that span — so the events the handler emits (contracts.Follow copies
// the cause's trace context) are its children, and one saga is one trace
// that chains validator → merger → notifier → indexer, with the ledger's
// spans hanging off each step and the relays' publish spans off the
// handler that emitted the event. An event that carries no traceparent (a
// client's request) joins the trace derived from its correlation id
// (RunTraceID), so that the validator and the ledger, which both consume
// it, still land in one trace.
//
// Spans are exported over OTLP/HTTP when an endpoint is configured; without
// one the provider still runs (unsampled), so that trace context — and the
// trace id shown on the dashboard — still propagates.
package telemetry
