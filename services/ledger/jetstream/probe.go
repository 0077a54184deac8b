package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/services/ledger"
)

// maxDeliveriesSubject is where the server announces a message a consumer
// stopped retrying; bus.AdvisoryStream keeps these advisories.
const maxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + contracts.Stream + "."

// Probe reads consumer and stream info. Safe for concurrent use.
type Probe struct {
	b *bus.Bus
}

var _ ledger.BusProbe = (*Probe)(nil)

// New returns a probe over the bus.
func New(b *bus.Bus) *Probe { return &Probe{b: b} }

// Ping checks the connection and that JetStream answers.
func (p *Probe) Ping(ctx context.Context) error {
	if p.b.NC.IsClosed() {
		return ledger.ErrBusClosed
	}
	if !p.b.NC.IsConnected() {
		return errors.New("not connected to NATS")
	}
	if _, err := p.b.JS.AccountInfo(ctx); err != nil {
		return fmt.Errorf("jetstream account info: %w", err)
	}
	return nil
}

// Backlog reads a durable consumer's counts and the max-delivery
// advisories it caused.
func (p *Probe) Backlog(ctx context.Context, durable string) (ledger.Backlog, error) {
	c, err := p.b.JS.Consumer(ctx, contracts.Stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return ledger.Backlog{}, fmt.Errorf("consumer %s does not exist: has the %s service ever started?", durable, durable)
	}
	if err != nil {
		return ledger.Backlog{}, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return ledger.Backlog{}, err
	}
	out := ledger.Backlog{Pending: info.NumPending, AckPending: uint64(info.NumAckPending), Redelivered: uint64(info.NumRedelivered)}
	if n, err := p.subjectCount(ctx, bus.AdvisoryStream, maxDeliveriesSubject+durable); err == nil {
		out.GaveUp = n
	}
	return out, nil
}

// DeadLetters counts the messages on prsaga.dlq.<consumer>.
func (p *Probe) DeadLetters(ctx context.Context, consumer string) (uint64, error) {
	return p.subjectCount(ctx, contracts.DLQStream, contracts.DLQSubject(consumer))
}

// DeadLettersTotal counts every message stream PRSAGA_DLQ holds.
func (p *Probe) DeadLettersTotal(ctx context.Context) (uint64, error) {
	s, err := p.b.JS.Stream(ctx, contracts.DLQStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

func (p *Probe) subjectCount(ctx context.Context, stream, subject string) (uint64, error) {
	s, err := p.b.JS.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	return info.State.Subjects[subject], nil
}
