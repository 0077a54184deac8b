package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/step"
)

// clientSource is the CloudEvents source of the benchmark's requests.
const clientSource = "urn:prsaga:bench"

// driver publishes the requests with at most C in flight and learns of each
// saga's end from the ledger's state_changed announcements.
type driver struct {
	b        *bus.Bus
	workload string
	prs      []pr
	index    map[string]int // pr id -> i

	ids  []string    // requested event id (= correlation id) per PR
	sent []time.Time // publish time per PR
	end  []atomic.Bool

	finished  chan int // PRs whose saga reached MERGED or MERGE_FAILED
	merged    atomic.Int64
	failed    atomic.Int64
	published atomic.Int64
}

func newDriver(b *bus.Bus, workload string, prs []pr) *driver {
	d := &driver{
		b: b, workload: workload, prs: prs, index: make(map[string]int, len(prs)),
		ids: make([]string, len(prs)), sent: make([]time.Time, len(prs)), end: make([]atomic.Bool, len(prs)),
		finished: make(chan int, len(prs)),
	}
	for i, p := range prs {
		d.index[p.id] = i
		d.ids[i] = step.NewID()
	}
	return d
}

// watch follows prsaga.saga.state_changed from now on with an ordered
// consumer (no gaps, no acks); stop it with the returned function.
func (d *driver) watch(ctx context.Context) (stop func(), err error) {
	cons, err := d.b.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.SubjectStateChanged},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("watch state changes: %w", err)
	}
	cc, err := cons.Consume(d.onStateChanged, jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("watch state changes: %w", err)
	}
	return func() { cc.Stop(); <-cc.Closed() }, nil
}

func (d *driver) onStateChanged(m jetstream.Msg) {
	var sc struct {
		PRID    string          `json:"pr_id"`
		ToState contracts.State `json:"to_state"`
	}
	if json.Unmarshal(m.Data(), &sc) != nil {
		return // not ours to judge; the world check looks at the ledger
	}
	i, ok := d.index[sc.PRID]
	if !ok || (sc.ToState != contracts.StateMerged && sc.ToState != contracts.StateMergeFailed) {
		return
	}
	if d.end[i].Swap(true) {
		return
	}
	if sc.ToState == contracts.StateMerged {
		d.merged.Add(1)
	} else {
		d.failed.Add(1)
	}
	d.finished <- i // buffered for every PR: never blocks
}

// run publishes every request, keeping at most c sagas in flight, and
// returns once every saga ended or ctx is done (then with ctx's error).
func (d *driver) run(ctx context.Context, c int) error {
	slots := make(chan struct{}, c)
	var wg sync.WaitGroup
	wg.Add(1)
	allDone := make(chan struct{})
	go func() {
		defer wg.Done()
		for n := 0; n < len(d.prs); n++ {
			select {
			case <-d.finished:
				<-slots
			case <-ctx.Done():
				return
			}
		}
		close(allDone)
	}()
	defer wg.Wait()
	for i := range d.prs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := d.publish(ctx, i); err != nil {
			return err
		}
	}
	select {
	case <-allDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish sends PR i's requested event straight to JetStream (as a forge
// would), retrying a failed publish with the same id: JetStream's dedupe
// makes a repeat harmless.
func (d *driver) publish(ctx context.Context, i int) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		now := time.Now()
		e, berr := contracts.NewRequested(d.ids[i], clientSource, now, d.prs[i].request(d.workload), "")
		if berr != nil {
			return berr
		}
		if attempt == 0 {
			d.sent[i] = now
		}
		if err = d.b.Publish(ctx, e); err == nil {
			d.published.Add(1)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("publish request of %s: %w", d.prs[i].id, err)
}
