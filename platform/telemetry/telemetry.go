package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Config of a process's telemetry. The zero value is valid: metrics, and
// trace context that propagates without being exported.
type Config struct {
	// OTLPEndpoint is where spans are exported over OTLP/HTTP
	// (PRSAGA_OTLP_ENDPOINT): a URL such as http://collector:4318 (the
	// path defaults to /v1/traces) or host:port (https). Empty exports
	// nothing.
	OTLPEndpoint string
	// Exporter, when set, receives every span as it ends (a synchronous
	// processor), instead of the OTLP exporter: tests pass
	// tracetest.NewInMemoryExporter(). It stays the caller's to shut down.
	Exporter sdktrace.SpanExporter
	// Log receives the exporter's troubles; default discarded.
	Log *slog.Logger
}

// Telemetry is one process's metrics registry and tracer providers. It is
// safe for concurrent use.
type Telemetry struct {
	// Registry holds every metric; serve it with Handler.
	Registry *prometheus.Registry
	m        *metrics
	exporter sdktrace.SpanExporter
	owned    bool // exporter is ours to shut down
	sync     bool
	sampler  sdktrace.Sampler
	log      *slog.Logger

	mu        sync.Mutex
	providers map[string]*sdktrace.TracerProvider
	closed    bool
}

// New builds the registry and, with an endpoint, the OTLP exporter (which
// connects lazily: an unreachable collector does not stop the start).
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{Registry: prometheus.NewRegistry(), providers: map[string]*sdktrace.TracerProvider{}, log: cfg.Log}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	t.m = newMetrics(t.Registry)
	switch {
	case cfg.Exporter != nil:
		t.exporter, t.sync = cfg.Exporter, true
	case cfg.OTLPEndpoint != "":
		opt, err := endpointOption(cfg.OTLPEndpoint)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(ctx, opt)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter: %w", err)
		}
		t.exporter, t.owned = exp, true
	}
	if t.exporter != nil {
		t.sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	} else {
		// Spans nobody exports are not recorded, but they still have ids
		// and so still propagate.
		t.sampler = sdktrace.NeverSample()
	}
	return t, nil
}

// endpointOption reads PRSAGA_OTLP_ENDPOINT: a URL, or host:port.
func endpointOption(ep string) (otlptracehttp.Option, error) {
	if !strings.Contains(ep, "://") {
		if strings.ContainsAny(ep, "/?#") {
			return nil, fmt.Errorf("PRSAGA_OTLP_ENDPOINT %q: want a URL (http://host:4318) or host:port", ep)
		}
		return otlptracehttp.WithEndpoint(ep), nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("PRSAGA_OTLP_ENDPOINT %q: want an http(s) URL such as http://collector:4318, or host:port", ep)
	}
	if u.Path == "" || u.Path == "/" {
		ep = strings.TrimSuffix(ep, "/") + "/v1/traces"
	}
	return otlptracehttp.WithEndpointURL(ep), nil
}

// Exporting reports whether spans go anywhere.
func (t *Telemetry) Exporting() bool { return t.exporter != nil }

// Handler serves the registry in the Prometheus text format (/metrics).
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry, ErrorHandling: promhttp.ContinueOnError})
}

// Tracer is the tracer of one service: its spans carry the resource
// service.name=<service>, as if it ran in a process of its own.
func (t *Telemetry) Tracer(service string) trace.Tracer {
	return t.provider(service).Tracer("github.com/prsaga/prsaga/platform/telemetry")
}

func (t *Telemetry) provider(service string) *sdktrace.TracerProvider {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.providers[service]; ok {
		return p
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceNamespace("prsaga")))
	if err != nil {
		res = resource.NewSchemaless(semconv.ServiceName(service), semconv.ServiceNamespace("prsaga"))
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(t.sampler)}
	if t.exporter != nil && !t.closed {
		// Each provider's processor shuts down "its" exporter when the
		// provider does; they share one, which Shutdown closes last.
		exp := keepOpen{t.exporter}
		if t.sync {
			opts = append(opts, sdktrace.WithSyncer(exp))
		} else {
			opts = append(opts, sdktrace.WithBatcher(exp))
		}
	}
	p := sdktrace.NewTracerProvider(opts...)
	t.providers[service] = p
	return p
}

// keepOpen is an exporter whose Shutdown leaves the shared exporter open.
type keepOpen struct{ sdktrace.SpanExporter }

func (keepOpen) Shutdown(context.Context) error { return nil }

// Shutdown flushes the spans not yet exported and closes the exporter
// (not one given in Config). Safe to call more than once.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	ps := make([]*sdktrace.TracerProvider, 0, len(t.providers))
	for _, p := range t.providers {
		ps = append(ps, p)
	}
	wasClosed := t.closed
	t.closed = true
	t.mu.Unlock()
	if wasClosed {
		return nil
	}
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Shutdown(ctx))
	}
	if t.owned {
		errs = append(errs, t.exporter.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}
