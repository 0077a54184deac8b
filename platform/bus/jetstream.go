package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
)

// Config of the connection, the streams and the consumers.
type Config struct {
	// URL of the NATS server(s), comma-separated for a cluster. Ignored when
	// InProcess is set.
	URL string
	// InProcess connects to an embedded server without TCP.
	InProcess *server.Server
	// Name identifies the connection in the server's monitoring.
	Name string
	// CredsFile is a NATS credentials file (PRSAGA_NATS_CREDS).
	CredsFile string
	// TLS: a CA file and an optional client certificate (PRSAGA_NATS_TLS_*).
	TLSCA, TLSCert, TLSKey string

	Replicas   int           // stream replicas; 1, or 3 on a cluster
	MaxAge     time.Duration // how long the stream keeps messages
	Duplicates time.Duration // JetStream's dedupe window
	AckWait    time.Duration
	MaxDeliver int // for step consumers; lock and ledger consumers never give up

	// DLQMaxAge is how long the dead-letter stream keeps dead letters
	// (PRSAGA_RETENTION_DLQ; default MaxAge). EnsureStreams applies it to
	// an existing stream too.
	DLQMaxAge time.Duration

	// WaitForServer makes Connect succeed while no server can be reached
	// yet: the connection keeps trying in the background (as it does
	// after losing a server), and JetStream calls fail as Unavailable
	// until it is made — wrap them in Await. Services set it (`prsaga
	// serve` may start before `prsaga nats`); one-shot commands do not,
	// and fail at once.
	WaitForServer bool
}

// WithDefaults fills zero fields with design §8's defaults.
func (c Config) WithDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxAge == 0 {
		c.MaxAge = 168 * time.Hour
	}
	if c.DLQMaxAge == 0 {
		c.DLQMaxAge = c.MaxAge
	}
	if c.Duplicates == 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 10
	}
	return c
}

// Bus is a connection to JetStream. Safe for concurrent use.
type Bus struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	cfg    Config
	closed chan struct{} // closed by the connection's ClosedHandler
}

// Connect dials NATS and returns the JetStream handle. It does not create
// streams: call EnsureStreams.
func Connect(ctx context.Context, cfg Config) (*Bus, error) {
	cfg = cfg.WithDefaults()
	closed := make(chan struct{})
	var closeOnce sync.Once
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ClosedHandler(func(*nats.Conn) { closeOnce.Do(func() { close(closed) }) }),
	}
	url := cfg.URL
	if cfg.InProcess != nil {
		opts = append(opts, nats.InProcessServer(cfg.InProcess))
		url = cfg.InProcess.ClientURL() // required, never dialled
	}
	if cfg.WaitForServer {
		opts = append(opts, nats.RetryOnFailedConnect(true))
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if url == "" {
		return nil, errors.New("bus: no NATS URL")
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", redactURL(url), err)
	}
	// An async publish whose ack never comes fails after PublishAsyncTimeout
	// (its outbox row stays unsent and is published again), instead of
	// holding one of the MaxPending slots for good.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024), jetstream.WithPublishAsyncTimeout(PublishAsyncTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Bus{NC: nc, JS: js, cfg: cfg, closed: closed}, nil
}

// Config returns the effective configuration.
func (b *Bus) Config() Config { return b.cfg }

// Close drains the connection and returns once it is closed, so that acks
// and publishes still buffered reach the server before the process exits
// (bounded by the client's drain timeout, 30s). Safe to call more than once.
func (b *Bus) Close() {
	_ = b.NC.Drain() // an error means it is closing or closed already
	<-b.closed
}

// AdvisoryStream keeps the server's max-delivery advisories, which are plain
// core-NATS messages and lost if nobody listens.
const AdvisoryStream = "PRSAGA_ADVISORIES"

// EnsureStreams creates or updates PRSAGA, PRSAGA_DLQ and the advisory
// stream. Safe to call from every service at start.
func (b *Bus) EnsureStreams(ctx context.Context) error {
	streams := []jetstream.StreamConfig{{
		Name:       contracts.Stream,
		Subjects:   contracts.StreamSubjects,
		MaxAge:     b.cfg.MaxAge,
		Duplicates: b.cfg.Duplicates,
		Replicas:   b.cfg.Replicas,
	}, {
		Name:       contracts.DLQStream,
		Subjects:   []string{contracts.DLQSubjectPrefix + ">"},
		MaxAge:     b.cfg.DLQMaxAge,
		Duplicates: b.cfg.Duplicates,
		Replicas:   b.cfg.Replicas,
	}, {
		Name:     AdvisoryStream,
		Subjects: []string{"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + contracts.Stream + ".>"},
		MaxAge:   b.cfg.MaxAge,
		Replicas: b.cfg.Replicas,
	}}
	for _, sc := range streams {
		if _, err := b.JS.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("ensure stream %s: %w", sc.Name, err)
		}
	}
	return nil
}

// ConsumerSpec describes one durable pull consumer.
type ConsumerSpec struct {
	Durable  string
	Subjects []string
	// GiveUp bounds deliveries at MaxDeliver (step consumers); otherwise
	// deliveries are unbounded (ledger and lock consumers).
	GiveUp bool
}

// Consumer creates or updates a durable pull consumer on PRSAGA.
func (b *Bus) Consumer(ctx context.Context, spec ConsumerSpec) (jetstream.Consumer, error) {
	cc := jetstream.ConsumerConfig{
		Durable:        spec.Durable,
		FilterSubjects: spec.Subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        b.cfg.AckWait,
		MaxDeliver:     -1,
		MaxAckPending:  1000,
	}
	if len(spec.Subjects) == 1 {
		cc.FilterSubject, cc.FilterSubjects = spec.Subjects[0], nil
	}
	if spec.GiveUp {
		cc.MaxDeliver = b.cfg.MaxDeliver
	}
	c, err := b.JS.CreateOrUpdateConsumer(ctx, contracts.Stream, cc)
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s: %w", spec.Durable, err)
	}
	return c, nil
}

// Publish sends an event on its subject (contracts.SubjectOf) and waits for JetStream's ack.
func (b *Bus) Publish(ctx context.Context, e *event.Event) error {
	subject, err := contracts.SubjectOf(e)
	if err != nil {
		return fmt.Errorf("publish %s: %w", e.Type(), err)
	}
	msg, err := Encode(subject, e)
	if err != nil {
		return err
	}
	_, err = b.PublishMsg(ctx, msg)
	return err
}

// PublishMsg publishes a prepared message and waits for the ack. The
// Nats-Msg-Id header, when present, makes a repeat a no-op in the window.
func (b *Bus) PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	ack, err := b.JS.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("publish to %s: %w", msg.Subject, err)
	}
	return ack, nil
}

// PublishAsyncTimeout bounds the wait for the ack of an async publish.
const PublishAsyncTimeout = 10 * time.Second

// PublishMsgAsync publishes a prepared message without waiting for the
// ack: the future resolves with JetStream's ack, an error, or
// ErrAsyncPublishTimeout after PublishAsyncTimeout. The connection keeps
// publishes in order. Used by the outbox relay to put a whole batch on the
// wire and then await the acks together.
func (b *Bus) PublishMsgAsync(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	f, err := b.JS.PublishMsgAsync(msg)
	if err != nil {
		return nil, fmt.Errorf("publish to %s: %w", msg.Subject, err)
	}
	return f, nil
}

// DeadLetter publishes a message that cannot be attributed to a saga to
// prsaga.dlq.<consumer>, keeping its body and headers and adding the reason.
func (b *Bus) DeadLetter(ctx context.Context, consumer string, orig *nats.Msg, reason string) error {
	h := nats.Header{}
	for k, v := range orig.Header {
		h[k] = append([]string(nil), v...)
	}
	id := h.Get(HeaderMsgID)
	if id == "" {
		if md, err := orig.Metadata(); err == nil {
			id = fmt.Sprintf("seq%d", md.Sequence.Stream)
		}
	}
	if id == "" {
		// Metadata works only for a message bound to a legacy subscription;
		// without an id every id-less message of this consumer would share
		// "dlq.<consumer>." and the second would be dropped as a duplicate.
		id = contentID(orig)
	}
	h[HeaderMsgID] = []string{contracts.DLQMsgID(consumer, id)}
	h[contracts.DLQReasonHeader] = []string{oneLine(reason)}
	h[contracts.DLQSubjectHeader] = []string{orig.Subject}
	_, err := b.PublishMsg(ctx, &nats.Msg{Subject: contracts.DLQSubject(consumer), Header: h, Data: orig.Data})
	return err
}

// contentID names a message by its content, so that dead-lettering the
// same message again dedupes and different messages do not.
func contentID(m *nats.Msg) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "%q\n", m.Subject)
	keys := make([]string, 0, len(m.Header))
	for k := range m.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(sum, "%q=%q\n", k, m.Header[k])
	}
	sum.Write(m.Data)
	return "sha256-" + hex.EncodeToString(sum.Sum(nil))[:32]
}

func oneLine(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if len(s) > 1024 {
		s = strings.ToValidUTF8(s[:1024], "") // do not leave half a rune
	}
	return s
}

func redactURL(u string) string {
	var out []string
	for _, one := range strings.Split(u, ",") {
		if i := strings.Index(one, "@"); i >= 0 {
			if j := strings.Index(one, "://"); j >= 0 && j < i {
				one = one[:j+3] + "***" + one[i:]
			}
		}
		out = append(out, one)
	}
	return strings.Join(out, ",")
}
