package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// ErrNotFound: no dead letter has that sequence number (redriven already,
// or never there). Returned wrapped, with the sequence number.
var ErrNotFound = errors.New("no dead letter")

func notFound(seq uint64) error {
	return fmt.Errorf("%w %d (redriven already, or never there)", ErrNotFound, seq)
}

// Letter is one message of PRSAGA_DLQ. The JSON form is what
// `prsaga dlq list --json` prints (design §7).
type Letter struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Consumer  string    `json:"consumer"` // the one that gave up on it
	Subject   string    `json:"subject"`  // the original's
	Reason    string    `json:"reason"`
	EventID   string    `json:"event_id,omitempty"`
	EventType string    `json:"event_type,omitempty"`

	// Header and Data are the dead letter as stored: the original's
	// headers and body plus the dead-letter headers.
	Header nats.Header `json:"-"`
	Data   []byte      `json:"-"`
}

func letterOf(m *jetstream.RawStreamMsg) Letter {
	l := Letter{Seq: m.Sequence, Time: m.Time.UTC(), Consumer: strings.TrimPrefix(m.Subject, contracts.DLQSubjectPrefix),
		Subject: m.Header.Get(contracts.DLQSubjectHeader), Reason: m.Header.Get(contracts.DLQReasonHeader),
		Header: m.Header, Data: m.Data}
	// The codec writes ce-* headers lower-case; Header.Get would look
	// for the canonical spelling only.
	for k, vs := range m.Header {
		if len(vs) == 0 {
			continue
		}
		switch strings.ToLower(k) {
		case "ce-id":
			l.EventID = vs[0]
		case "ce-type":
			l.EventType = vs[0]
		}
	}
	return l
}

// origID is the id of the message l is a dead letter of (its
// contracts.DLQMsgID names it), "none" when it had none.
func (l Letter) origID() string {
	id := strings.TrimPrefix(l.Header.Get(bus.HeaderMsgID), contracts.DLQMsgID(l.Consumer, ""))
	if id == "" {
		id = "none"
	}
	return id
}

// ValidConsumer reports whether name can be a durable consumer's name
// here: it goes into a subject filter, where '.', '*' and '>' would
// widen it.
func ValidConsumer(name string) bool {
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

// Queue reads and redrives PRSAGA_DLQ over b. Safe for concurrent use:
// two redrives of one dead letter within JetStream's dedupe window
// publish it once (see Redrive).
type Queue struct{ b *bus.Bus }

// New returns the queue on b; b stays the caller's to close.
func New(b *bus.Bus) *Queue { return &Queue{b: b} }

func (q *Queue) stream(ctx context.Context) (jetstream.Stream, error) {
	s, err := q.b.JS.Stream(ctx, contracts.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", contracts.DLQStream, err)
	}
	return s, nil
}

// Scan returns the dead letters from the oldest, those of consumer only
// when it is not empty, at most limit of them (0: all).
func (q *Queue) Scan(ctx context.Context, consumer string, limit int) ([]Letter, error) {
	if !ValidConsumer(consumer) {
		return nil, fmt.Errorf("%q is not a consumer name", consumer)
	}
	s, err := q.stream(ctx)
	if err != nil {
		return nil, err
	}
	filter := contracts.DLQSubjectPrefix + ">"
	if consumer != "" {
		filter = contracts.DLQSubject(consumer)
	}
	var out []Letter
	for seq := uint64(1); limit == 0 || len(out) < limit; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break // no message at or after seq
		}
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", contracts.DLQStream, seq, err)
		}
		out = append(out, letterOf(m))
		seq = m.Sequence + 1
	}
	return out, nil
}

// Get returns dead letter seq, or an error wrapping ErrNotFound.
func (q *Queue) Get(ctx context.Context, seq uint64) (Letter, error) {
	s, err := q.stream(ctx)
	if err != nil {
		return Letter{}, err
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Letter{}, notFound(seq)
	}
	if err != nil {
		return Letter{}, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return letterOf(m), nil
}
