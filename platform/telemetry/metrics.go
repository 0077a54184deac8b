package telemetry

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prsaga/prsaga/contracts"
)

// Metric names, as registered (histograms add _bucket, _sum, _count).
const (
	MetricTransitions      = "prsaga_saga_transitions_total"
	MetricMergeFailed      = "prsaga_saga_merge_failed_total"
	MetricStepDuration     = "prsaga_step_duration_seconds"
	MetricInFlight         = "prsaga_sagas_in_flight"
	MetricInFlightOldest   = "prsaga_sagas_in_flight_oldest_age_seconds"
	MetricOutboxPending    = "prsaga_outbox_pending"
	MetricOutboxOldest     = "prsaga_outbox_oldest_age_seconds"
	MetricRedeliveries     = "prsaga_consumer_redeliveries_total"
	MetricDLQ              = "prsaga_dlq_messages_total"
	MetricWatchdogTimeouts = "prsaga_watchdog_timeouts_total"
	MetricEventsHandled    = "prsaga_events_handled_total"
	MetricHandleDuration   = "prsaga_handle_duration_seconds"
	MetricEventsPublished  = "prsaga_events_published_total"
	MetricReadErrors       = "prsaga_metrics_read_errors_total"
	MetricPruned           = "prsaga_pruned_rows_total"
	MetricStoreSize        = "prsaga_store_size"
)

// catalog is every prsaga metric a Telemetry registers, with its labels
// (histograms add the le label and the _bucket, _sum and _count series).
var catalog = map[string][]string{
	MetricTransitions:      {"from", "to"},
	MetricMergeFailed:      {"step", "code"},
	MetricStepDuration:     {"step"},
	MetricInFlight:         {"state"},
	MetricInFlightOldest:   {"state"},
	MetricOutboxPending:    {"service"},
	MetricOutboxOldest:     {"service"},
	MetricRedeliveries:     {"consumer"},
	MetricDLQ:              {"consumer"},
	MetricWatchdogTimeouts: {"step"},
	MetricEventsHandled:    {"consumer", "outcome"},
	MetricHandleDuration:   {"consumer"},
	MetricEventsPublished:  {"service", "result"},
	MetricReadErrors:       {"what"},
	MetricPruned:           {"service", "table"},
	MetricStoreSize:        {"service", "what"},
}

// MetricNames lists every prsaga metric a Telemetry registers, sorted (the
// Go and process collectors' go_* and process_* come on top). deploy/'s
// alert rules and dashboard are checked against it.
func MetricNames() []string {
	names := make([]string, 0, len(catalog))
	for n := range catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MetricLabels returns the labels of a metric MetricNames lists (nil for
// any other name).
func MetricLabels(name string) []string {
	return append([]string(nil), catalog[name]...)
}

// IsHistogram reports whether a metric MetricNames lists is a histogram.
func IsHistogram(name string) bool {
	return name == MetricStepDuration || name == MetricHandleDuration
}

// stepBuckets span a fast in-process step (milliseconds) to one waiting
// out webhook retries (minutes).
var stepBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// knownConsumers are pre-initialised at zero, so that increase() sees the
// first dead letter or redelivery of each.
var knownConsumers = []string{contracts.ConsumerValidator, contracts.ConsumerValidatorLock, contracts.ConsumerMerger, contracts.ConsumerNotifier,
	contracts.ConsumerIndexer, contracts.ConsumerLedger}

type metrics struct {
	transitions  *prometheus.CounterVec
	mergeFailed  *prometheus.CounterVec
	stepDuration *prometheus.HistogramVec
	redeliveries *prometheus.CounterVec
	dlq          *prometheus.CounterVec
	timeouts     *prometheus.CounterVec
	handled      *prometheus.CounterVec
	handleTime   *prometheus.HistogramVec
	published    *prometheus.CounterVec
	readErrors   *prometheus.CounterVec
	pruned       *prometheus.CounterVec
	storeSize    *prometheus.GaugeVec
	gauges       *gauges
}

// counter is a counter vector named name, labelled by labels.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogram is a histogram vector of durations over stepBuckets.
func histogram(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: stepBuckets}, labels)
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		transitions: counter(MetricTransitions, "Saga transitions applied by the ledger, by from and to state (from=\"none\" when the saga starts).",
			"from", "to"),
		mergeFailed: counter(MetricMergeFailed, "Sagas moved to MERGE_FAILED, by the failed step and the failure code (timed_out for the watchdog).",
			"step", "code"),
		stepDuration: histogram(MetricStepDuration, "Time a saga spent in a step, from the transition into it to the next one, as the ledger saw them.",
			"step"),
		redeliveries: counter(MetricRedeliveries, "Messages a durable consumer received more than once (JetStream redeliveries).",
			"consumer"),
		dlq: counter(MetricDLQ, "Messages a consumer dead-lettered to prsaga.dlq.<consumer>.",
			"consumer"),
		timeouts: counter(MetricWatchdogTimeouts, "Sagas the ledger's watchdog moved to MERGE_FAILED, by the step that timed out.",
			"step"),
		handled: counter(MetricEventsHandled, "Events a consumer finished handling, by outcome (acked, duplicate, retry, gave_up, crashed).",
			"consumer", "outcome"),
		handleTime: histogram(MetricHandleDuration, "Time from taking a message to settling it (side effect, commit, ack), by consumer.",
			"consumer"),
		published: counter(MetricEventsPublished, "Outbox rows a service's relay published, by result (ok, error).",
			"service", "result"),
		readErrors: counter(MetricReadErrors, "Scrapes whose reading of a store failed, by what was read (outbox, sagas).",
			"what"),
		pruned: counter(MetricPruned, "Rows retention pruned from a service's store, by table (inbox, outbox, a service's own such as delivery).",
			"service", "table"),
		storeSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricStoreSize,
			Help: "A service's store after its last pruning round: inbox_rows, outbox_rows, file_bytes (SQLite file and WAL), wal_bytes, free_bytes (free pages inside the file)."},
			[]string{"service", "what"}),
	}
	m.gauges = &gauges{m: m}
	reg.MustRegister(m.transitions, m.mergeFailed, m.stepDuration, m.redeliveries, m.dlq, m.timeouts,
		m.handled, m.handleTime, m.published, m.readErrors, m.pruned, m.storeSize, m.gauges)
	for _, c := range knownConsumers {
		m.redeliveries.WithLabelValues(c)
		m.dlq.WithLabelValues(c)
	}
	for _, s := range contracts.Steps {
		m.timeouts.WithLabelValues(string(s))
	}
	return m
}

// OutboxStats reads a service's outbox at scrape time: unsent rows and the
// age of the oldest (sqlite.DB.OutboxStats).
type OutboxStats func(ctx context.Context) (pending int, oldest time.Duration, err error)

// StateCount is one saga state as the ledger's table holds it.
type StateCount struct {
	Sagas int
	// Oldest is the updated_at of the saga waiting longest in the state;
	// zero when there is none.
	Oldest time.Time
}

// SagaStates reads the ledger's sagas per state at scrape time.
type SagaStates func(ctx context.Context) (map[contracts.State]StateCount, error)

// readTimeout bounds a scrape's reading of a store.
const readTimeout = 2 * time.Second

// gauges reads the outboxes and the saga table when scraped: a gauge
// that is only as fresh as the last write would lie after a crash.
type gauges struct {
	m      *metrics
	mu     sync.Mutex
	outbox map[string]OutboxStats
	sagas  SagaStates
}

var (
	descPending        = prometheus.NewDesc(MetricOutboxPending, "Outbox rows not yet published, by service.", []string{"service"}, nil)
	descOutboxOldest   = prometheus.NewDesc(MetricOutboxOldest, "Age of the oldest unpublished outbox row, by service (0 when none).", []string{"service"}, nil)
	descInFlight       = prometheus.NewDesc(MetricInFlight, "Sagas in each in-flight state (VALIDATING, MERGING, NOTIFYING, INDEXING).", []string{"state"}, nil)
	descInFlightOldest = prometheus.NewDesc(MetricInFlightOldest, "How long the longest-waiting saga of each in-flight state has been in it (0 when none).", []string{"state"}, nil)
)

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPending
	ch <- descOutboxOldest
	ch <- descInFlight
	ch <- descInFlightOldest
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	services := make([]string, 0, len(g.outbox))
	for s := range g.outbox {
		services = append(services, s)
	}
	sort.Strings(services)
	outbox := make([]OutboxStats, len(services))
	for i, s := range services {
		outbox[i] = g.outbox[s]
	}
	sagas := g.sagas
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	for i, s := range services {
		pending, oldest, err := outbox[i](ctx)
		if err != nil {
			g.m.readErrors.WithLabelValues("outbox").Inc()
			continue // no sample beats a wrong one
		}
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(pending), s)
		ch <- prometheus.MustNewConstMetric(descOutboxOldest, prometheus.GaugeValue, oldest.Seconds(), s)
	}
	if sagas == nil {
		return
	}
	counts, err := sagas(ctx)
	if err != nil {
		g.m.readErrors.WithLabelValues("sagas").Inc()
		return
	}
	now := time.Now()
	for _, st := range contracts.Steps {
		c := counts[st]
		age := 0.0
		if c.Sagas > 0 && !c.Oldest.IsZero() {
			age = max(0, now.Sub(c.Oldest).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(c.Sagas), string(st))
		ch <- prometheus.MustNewConstMetric(descInFlightOldest, prometheus.GaugeValue, age, string(st))
	}
}
