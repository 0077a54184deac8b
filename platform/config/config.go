// Package config reads prsaga's configuration (design §8): every setting is
// an environment variable and also a flag; bad or inconsistent values fail
// at start with one clear line.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Config is the whole configuration of a prsaga process.
type Config struct {
	NATSURL, NATSListen, NATSCreds      string
	NATSTLSCA, NATSTLSCert, NATSTLSKey  string
	StreamReplicas                      int
	StreamMaxAge, DedupeWindow, AckWait time.Duration
	MaxDeliver                          int
	Backoff                             []time.Duration
	Store                               string // sqlite:///dir (default <data>/db) or ydb DSN
	Durability                          string // process | sync
	DataDir, ReposDir, HTTPAddr         string
	APIURL, APIToken, StatusToken       string
	StepTimeout                         time.Duration
	StepTimeouts                        map[contracts.State]time.Duration
	WatchdogInterval                    time.Duration
	WatchdogBatch                       int
	LogLevel, LogDir                    string
	WebhookAllowPrivate                 bool
	OTLPEndpoint                        string
	// ServiceHTTPAddr holds PRSAGA_<SERVICE>_HTTP_ADDR for services run as
	// separate processes on one host.
	ServiceHTTPAddr map[string]string
	// ReadToken may read (API, dashboard, search, /metrics) but not act;
	// with it or APIToken set, reads need one of them.
	ReadToken string
	// MetricsPublic serves /metrics without a token even when tokens are set.
	MetricsPublic bool
	// RetentionInbox keeps inbox entries this long (default the stream's
	// MaxAge + 1 day: a redelivery can come as long as the stream holds the
	// message); RetentionSent keeps outbox rows this long after they were
	// sent; PruneInterval is the pause between pruning rounds (0: never).
	RetentionInbox, RetentionSent, PruneInterval time.Duration
	// RetentionDeliveries keeps the webhook delivery rows of runs whose
	// every watcher was delivered this long after their last update
	// (default the longest of 30 days, RetentionInbox and RetentionDLQ: a
	// redelivery or a redriven dead letter of a run must still find its
	// rows, or a watcher would be sent the run again).
	RetentionDeliveries time.Duration
	// RetentionDLQ is the dead-letter stream's MaxAge (default 30 days:
	// a dead letter waits for a human).
	RetentionDLQ time.Duration
	// RetentionEventBodies empties the ledger's event bodies of sagas
	// merged this long ago (0: keep them forever).
	RetentionEventBodies time.Duration
	// GCHeapFloor is the Go heap a process may grow to before its
	// collector runs (0: GOGC alone decides); negative means the default,
	// DefaultGCHeapFloorPerService for each service the process runs.
	GCHeapFloor int64
}

// DefaultGCHeapFloorPerService is PRSAGA_GC_HEAP_FLOOR's default share of
// each service in a process: 16 MiB for `serve <service>`, 80 MiB for `dev`
// (five services). docs/performance.md (round twenty) has the measurements.
const DefaultGCHeapFloorPerService = 16 << 20

// HeapFloor is the heap floor of a process that runs services services
// (gcfloor).
func (c Config) HeapFloor(services int) uint64 {
	if c.GCHeapFloor >= 0 {
		return uint64(c.GCHeapFloor)
	}
	return uint64(max(services, 1)) * DefaultGCHeapFloorPerService
}

// DefaultRetentionDeliveries is the least PRSAGA_RETENTION_DELIVERIES
// defaults to: a month of delivery rows answers "was this watcher told?"
// for as long as an operator usually asks.
const DefaultRetentionDeliveries = 30 * 24 * time.Hour

// Getenv is os.Getenv's shape, injectable for tests.
type Getenv func(string) string

// Bind registers every setting as a flag whose default comes from the
// environment, then returns a function that parses the values after
// fs.Parse. Flag errors and env errors are reported the same way.
func Bind(fs *flag.FlagSet, getenv Getenv) func() (Config, error) {
	str := func(name, env, def, usage string) *string {
		v := getenv(env)
		if v == "" {
			v = def
		}
		return fs.String(name, v, usage+" ($"+env+")")
	}
	natsURL := str("nats-url", "PRSAGA_NATS_URL", "", "NATS server URL(s), comma-separated; empty runs an embedded server")
	natsListen := str("nats-listen", "PRSAGA_NATS_LISTEN", "127.0.0.1:4222", "embedded NATS listen address")
	natsCreds := str("nats-creds", "PRSAGA_NATS_CREDS", "", "NATS credentials file")
	tlsCA := str("nats-tls-ca", "PRSAGA_NATS_TLS_CA", "", "CA file for NATS TLS")
	tlsCert := str("nats-tls-cert", "PRSAGA_NATS_TLS_CERT", "", "client certificate for NATS TLS")
	tlsKey := str("nats-tls-key", "PRSAGA_NATS_TLS_KEY", "", "client key for NATS TLS")
	replicas := str("stream-replicas", "PRSAGA_STREAM_REPLICAS", "1", "JetStream stream replicas")
	maxAge := str("stream-max-age", "PRSAGA_STREAM_MAX_AGE", "168h", "how long the stream keeps events")
	dedupe := str("dedupe-window", "PRSAGA_DEDUPE_WINDOW", "2m", "JetStream duplicate window")
	ackWait := str("ack-wait", "PRSAGA_ACK_WAIT", "30s", "consumer ack wait")
	maxDeliver := str("max-deliver", "PRSAGA_MAX_DELIVER", "10", "deliveries before a step gives up")
	backoff := str("backoff", "PRSAGA_BACKOFF", "1s,5s,30s", "redelivery delays after a transient error")
	store := str("store", "PRSAGA_STORE", "", "sqlite:///dir (default <data>/db) or ydb://host:port/database")
	durability := str("durability", "PRSAGA_DURABILITY", "process", "process | sync")
	data := str("data", "PRSAGA_DATA_DIR", ".prsaga", "data directory")
	repos := str("repos", "PRSAGA_REPOS_DIR", "", "bare repositories (default <data>/repos)")
	httpAddr := str(httpListen.Flag, httpListen.Env, "127.0.0.1:8080", "HTTP listen address")
	apiURL := str("api", "PRSAGA_API_URL", "", "where client verbs talk (default http://<http addr>)")
	apiToken := str("api-token", "PRSAGA_API_TOKEN", "", "operator bearer token")
	statusToken := str("status-token", "PRSAGA_STATUS_TOKEN", "", "bearer token for CI commit statuses")
	readToken := str("read-token", "PRSAGA_READ_TOKEN", "", "read-only bearer token (dashboards); with it or the API token set, reads need a token")
	metricsPublic := str("metrics-public", "PRSAGA_METRICS_PUBLIC", "false", "serve /metrics without a token")
	stepTimeout := str("step-timeout", "PRSAGA_STEP_TIMEOUT", "10m", "default step timeout (watchdog)")
	wdInterval := str("watchdog-interval", "PRSAGA_WATCHDOG_INTERVAL", "5s", "watchdog tick")
	wdBatch := str("watchdog-batch", "PRSAGA_WATCHDOG_BATCH", "100", "rows per watchdog tick")
	logLevel := str("log-level", "PRSAGA_LOG_LEVEL", "info", "debug | info | warn | error")
	logDir := str("log-dir", "PRSAGA_LOG_DIR", "", "also write <dir>/<service>.jsonl")
	allowPrivate := str("webhook-allow-private", "PRSAGA_WEBHOOK_ALLOW_PRIVATE", "false", "allow webhooks to private addresses (tests, demos)")
	otlp := str("otlp-endpoint", "PRSAGA_OTLP_ENDPOINT", "", "OTLP trace endpoint")
	perState := map[contracts.State]*string{}
	for _, s := range contracts.Steps {
		perState[s] = str("step-timeout-"+strings.ToLower(string(s)), "PRSAGA_STEP_TIMEOUT_"+string(s), "", "timeout of "+string(s))
	}
	retInbox := str("retention-inbox", "PRSAGA_RETENTION_INBOX", "", "keep inbox entries this long (default PRSAGA_STREAM_MAX_AGE + 24h; never less than the stream's MaxAge)")
	retSent := str("retention-sent", "PRSAGA_RETENTION_SENT", "1h", "keep outbox rows this long after they were sent")
	pruneEvery := str("prune-interval", "PRSAGA_PRUNE_INTERVAL", "1m", "pause between pruning rounds of the inbox, the sent outbox rows and the delivery rows (0: never prune)")
	retDeliveries := str("retention-deliveries", "PRSAGA_RETENTION_DELIVERIES", "", "keep the delivery rows of fully delivered webhook runs this long (default the longest of 720h, the inbox's and the DLQ's retention; never less than either)")
	retDLQ := str("retention-dlq", "PRSAGA_RETENTION_DLQ", "720h", "how long the dead-letter stream keeps dead letters")
	gcFloor := str("gc-heap-floor", "PRSAGA_GC_HEAP_FLOOR", "", "Go heap this process grows to before collecting, like 80MiB (default 16MiB per service it runs; 0: GOGC alone; ignored when GOGC or GOMEMLIMIT is set)")
	retBodies := str("retention-event-bodies", "PRSAGA_RETENTION_EVENT_BODIES", "0", "empty the ledger's event bodies of sagas merged this long ago (0: keep forever); rows and transitions stay")
	perService := map[string]*string{}
	for _, s := range services {
		set := serviceListen(s)
		perService[s] = str(set.Flag, set.Env, "", "HTTP listen address of the "+s+" when run alone (default --http)")
	}

	return func() (Config, error) {
		var errs []error
		dur := func(name, v string) time.Duration {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration like 30s or 2m", name, v))
			}
			return d
		}
		num := func(name, v string) int {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", name, v))
			}
			return n
		}
		yes := func(name, v string) bool {
			switch v {
			case "true", "1", "yes":
				return true
			case "false", "0", "no", "":
			default:
				errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
			}
			return false
		}
		c := Config{
			NATSURL: *natsURL, NATSListen: *natsListen, NATSCreds: *natsCreds,
			NATSTLSCA: *tlsCA, NATSTLSCert: *tlsCert, NATSTLSKey: *tlsKey,
			StreamReplicas: num("PRSAGA_STREAM_REPLICAS", *replicas),
			StreamMaxAge:   dur("PRSAGA_STREAM_MAX_AGE", *maxAge),
			DedupeWindow:   dur("PRSAGA_DEDUPE_WINDOW", *dedupe),
			AckWait:        dur("PRSAGA_ACK_WAIT", *ackWait),
			MaxDeliver:     num("PRSAGA_MAX_DELIVER", *maxDeliver),
			Store:          *store, Durability: *durability,
			DataDir: *data, ReposDir: *repos, HTTPAddr: *httpAddr,
			APIURL: *apiURL, APIToken: *apiToken, StatusToken: *statusToken, ReadToken: *readToken,
			StepTimeout:      dur("PRSAGA_STEP_TIMEOUT", *stepTimeout),
			StepTimeouts:     map[contracts.State]time.Duration{},
			WatchdogInterval: dur("PRSAGA_WATCHDOG_INTERVAL", *wdInterval),
			WatchdogBatch:    num("PRSAGA_WATCHDOG_BATCH", *wdBatch),
			LogLevel:         *logLevel, LogDir: *logDir,
			OTLPEndpoint:    *otlp,
			ServiceHTTPAddr: map[string]string{},
			RetentionSent:   dur("PRSAGA_RETENTION_SENT", *retSent),
			PruneInterval:   dur("PRSAGA_PRUNE_INTERVAL", *pruneEvery),
		}
		c.RetentionEventBodies = dur("PRSAGA_RETENTION_EVENT_BODIES", *retBodies)
		c.GCHeapFloor = -1
		if *gcFloor != "" {
			n, err := parseBytes(*gcFloor)
			if err != nil {
				errs = append(errs, fmt.Errorf("PRSAGA_GC_HEAP_FLOOR: %w", err))
			}
			c.GCHeapFloor = n
		}
		c.RetentionInbox = c.StreamMaxAge + 24*time.Hour
		if *retInbox != "" {
			c.RetentionInbox = dur("PRSAGA_RETENTION_INBOX", *retInbox)
		}
		c.RetentionDLQ = dur("PRSAGA_RETENTION_DLQ", *retDLQ)
		c.RetentionDeliveries = max(DefaultRetentionDeliveries, c.RetentionInbox, c.RetentionDLQ)
		if *retDeliveries != "" {
			c.RetentionDeliveries = dur("PRSAGA_RETENTION_DELIVERIES", *retDeliveries)
		}
		for _, part := range strings.Split(*backoff, ",") {
			if part = strings.TrimSpace(part); part != "" {
				c.Backoff = append(c.Backoff, dur("PRSAGA_BACKOFF", part))
			}
		}
		c.WebhookAllowPrivate = yes("PRSAGA_WEBHOOK_ALLOW_PRIVATE", *allowPrivate)
		c.MetricsPublic = yes("PRSAGA_METRICS_PUBLIC", *metricsPublic)
		for s, v := range perState {
			c.StepTimeouts[s] = c.StepTimeout
			if *v != "" {
				c.StepTimeouts[s] = dur("PRSAGA_STEP_TIMEOUT_"+string(s), *v)
			}
		}
		for s, v := range perService {
			if *v != "" {
				c.ServiceHTTPAddr[s] = *v
			}
		}
		if c.ReposDir == "" {
			c.ReposDir = filepath.Join(c.DataDir, "repos")
		}
		if c.Store == "" {
			c.Store = "sqlite://" + filepath.Join(c.DataDir, "db")
		}
		if c.APIURL == "" {
			c.APIURL = "http://" + c.HTTPAddr
		}
		if err := errors.Join(errs...); err != nil {
			return c, err
		}
		return c, c.Validate()
	}
}

// Validate checks values and their consistency; every problem is reported.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Durability != "process" && c.Durability != "sync" {
		bad("PRSAGA_DURABILITY: %q is not process or sync", c.Durability)
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		bad("PRSAGA_STREAM_REPLICAS: %d is not between 1 and 5", c.StreamReplicas)
	}
	if c.MaxDeliver < 1 {
		bad("PRSAGA_MAX_DELIVER: %d must be at least 1", c.MaxDeliver)
	}
	if c.AckWait < time.Second {
		bad("PRSAGA_ACK_WAIT: %s is shorter than 1s", c.AckWait)
	}
	if len(c.Backoff) == 0 {
		bad("PRSAGA_BACKOFF: at least one delay is needed")
	}
	if c.WatchdogBatch < 1 {
		bad("PRSAGA_WATCHDOG_BATCH: %d must be at least 1", c.WatchdogBatch)
	}
	if c.WatchdogInterval <= 0 {
		bad("PRSAGA_WATCHDOG_INTERVAL must be positive")
	}
	if c.RetentionInbox < c.StreamMaxAge {
		// An entry pruned while the stream can still redeliver its message
		// would let the message be handled twice.
		bad("PRSAGA_RETENTION_INBOX: %s is shorter than PRSAGA_STREAM_MAX_AGE %s: a redelivery after pruning would be handled again", c.RetentionInbox, c.StreamMaxAge)
	}
	if c.RetentionDLQ <= 0 {
		// JetStream reads a MaxAge of 0 as "forever".
		bad("PRSAGA_RETENTION_DLQ: must be positive")
	}
	// A delivery row is what stops a watcher being sent a run again: it must
	// outlive every way the run's event can come back (a redelivery, kept
	// out by the inbox while its entry lasts; a redriven dead letter).
	if c.RetentionDeliveries < c.RetentionInbox {
		bad("PRSAGA_RETENTION_DELIVERIES: %s is shorter than PRSAGA_RETENTION_INBOX %s: a redelivered event would notify its watchers again", c.RetentionDeliveries, c.RetentionInbox)
	}
	if c.RetentionDeliveries < c.RetentionDLQ {
		bad("PRSAGA_RETENTION_DELIVERIES: %s is shorter than PRSAGA_RETENTION_DLQ %s: a redriven dead letter would notify its watchers again", c.RetentionDeliveries, c.RetentionDLQ)
	}
	if _, err := c.SQLiteDir(); err != nil && !c.IsYDB() {
		bad("PRSAGA_STORE: %v", err)
	}
	for _, l := range c.HTTPListeners() {
		if err := l.check(c.APIToken); err != nil {
			errs = append(errs, err)
		}
	}
	// The embedded NATS server has no users: whoever reaches it may publish
	// any subject, so the subjects would prove nothing (design §3, §11).
	if c.NATSURL == "" && c.NATSListen != "-" && !IsLoopback(c.NATSListen) {
		bad("PRSAGA_NATS_LISTEN: %s is not a loopback address, and the embedded NATS server has no users: anyone reaching it could publish any event; run nats-server with deploy/nats/accounts.conf and set PRSAGA_NATS_URL", c.NATSListen)
	}
	if c.ReadToken != "" && c.ReadToken == c.APIToken {
		bad("PRSAGA_READ_TOKEN: must differ from PRSAGA_API_TOKEN (a dashboard's token must not act)")
	}
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		bad("PRSAGA_API_URL: %q is not an http(s) URL", c.APIURL)
	}
	// A step must not time out while its deliveries are still being retried.
	budget := c.DeliveryBudget()
	for _, s := range contracts.Steps {
		if t := c.StepTimeouts[s]; t <= budget {
			bad("PRSAGA_STEP_TIMEOUT_%s: %s must exceed the delivery budget %s (ack wait × max deliver + backoff)", s, t, budget)
		}
	}
	return errors.Join(errs...)
}

// DeliveryBudget is how long JetStream may keep redelivering one event:
// AckWait × MaxDeliver plus the backoff total.
func (c Config) DeliveryBudget() time.Duration {
	b := c.AckWait * time.Duration(c.MaxDeliver)
	for i := 0; i < c.MaxDeliver && len(c.Backoff) > 0; i++ {
		b += c.Backoff[min(i, len(c.Backoff)-1)]
	}
	return b
}

// ReadTokens are the tokens that may read: the read token and the API
// token. None set: reads are open (loopback listeners only, see Validate).
func (c Config) ReadTokens() []string { return []string{c.ReadToken, c.APIToken} }

// ClientToken is the token the CLI's client verbs send: the API token, or
// else the read token (enough for status, history, list, trace).
func (c Config) ClientToken() string {
	if c.APIToken != "" {
		return c.APIToken
	}
	return c.ReadToken
}

// IsYDB reports whether the store is a YDB DSN.
func (c Config) IsYDB() bool {
	return strings.HasPrefix(c.Store, "ydb://") || strings.HasPrefix(c.Store, "grpc://") || strings.HasPrefix(c.Store, "grpcs://")
}

// SQLiteDir is the directory of the per-service SQLite files.
func (c Config) SQLiteDir() (string, error) {
	dir, ok := strings.CutPrefix(c.Store, "sqlite://")
	if !ok || dir == "" {
		return "", fmt.Errorf("%q is neither sqlite:///dir nor a ydb DSN", c.Store)
	}
	return dir, nil
}

// parseBytes reads a size: a whole number of bytes, or one with the suffix
// KiB, MiB or GiB.
func parseBytes(v string) (int64, error) {
	num, unit := v, int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(v, u.suffix) {
			num, unit = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<50)/unit {
		return 0, fmt.Errorf("%q is not a size like 80MiB, 1GiB or 0", v)
	}
	return n * unit, nil
}
