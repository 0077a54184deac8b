package runner

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/bus"
)

// delivery is one message handed from the intake to the workers.
//
// Two copies of one event id (a client reusing an id after JetStream's
// dedupe window, or bypassing it with its own Nats-Msg-Id) must not be
// handled at once: workers racing to commit would let the later copy win
// in one consumer while another consumer, handling in order, keeps the
// first — the saga would split. So the intake, which sees messages in
// delivery order, chains the copies of an id (claim), and a worker handles
// a copy only once the copy before it is settled (committed and acked, or
// retried); by then the inbox holds the id and the later copy is dropped
// as a duplicate. The first delivered body wins, unless its handling fails
// and it is retried: then the next copy goes ahead. Copies delivered to
// different instances of a service are not chained; their commits race,
// and the inbox keeps whichever commits first.
type delivery struct {
	m   jetstream.Msg
	key string // the event id as carried; "" if it cannot be read here
	// after is closed when the previous copy in flight is settled (nil:
	// there was none); done when this one is.
	after, done chan struct{}
	// probe answers its inbox check once taken by one (see probe.go);
	// settled is set by release. Both guarded by Runner.mu.
	probe   *probe
	settled bool
}

// claim registers m as the latest copy of its event id in flight.
func (r *Runner) claim(m jetstream.Msg) *delivery {
	d := &delivery{m: m, key: eventKey(m)}
	if d.key == "" {
		return d // undecodable: dead-lettered by open, nothing to order
	}
	d.done = make(chan struct{})
	r.mu.Lock()
	d.after = r.inflight[d.key]
	r.inflight[d.key] = d.done
	if r.cfg.HandleBatch == nil && !r.cfg.InCommitOnly { // no probe takes it otherwise
		r.wait(d)
	}
	r.mu.Unlock()
	return d
}

// release marks d settled, letting the next copy of its id go. Called once
// per delivery.
func (r *Runner) release(d *delivery) {
	if d.done == nil {
		return
	}
	r.mu.Lock()
	d.settled = true
	if r.inflight[d.key] == d.done {
		delete(r.inflight, d.key)
	}
	r.mu.Unlock()
	close(d.done)
}

// blocked reports whether d must wait for an earlier copy of its id.
func (d *delivery) blocked() bool {
	if d.after == nil {
		return false
	}
	select {
	case <-d.after:
		return false
	default:
		return true
	}
}

// await waits until the earlier copy of d's id is settled, keeping d in
// progress meanwhile. The worker holds nothing uncommitted while it waits,
// and the copy it waits for was delivered earlier and so already taken by
// a worker: copies wait only on earlier ones, never in a cycle.
func (r *Runner) await(ctx context.Context, d *delivery) {
	if !d.blocked() {
		return
	}
	stop := r.inProgress(d.m)
	defer stop()
	select {
	case <-d.after:
	case <-ctx.Done():
	}
}

// eventKey reads the event id without decoding the event: the ce-id header
// in binary mode, the body's id in structured mode.
func eventKey(m jetstream.Msg) string {
	h := m.Headers()
	if v := h["ce-id"]; len(v) > 0 {
		return v[0]
	}
	structured := false
	for k, v := range h {
		switch {
		case len(v) == 0:
		case strings.EqualFold(k, "ce-id"):
			return v[0]
		case strings.EqualFold(k, "content-type"):
			structured = strings.HasPrefix(strings.ToLower(v[0]), "application/cloudevents")
		}
	}
	if !structured || len(m.Data()) > bus.MaxBody {
		return ""
	}
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(m.Data(), &e) != nil {
		return ""
	}
	return e.ID
}
