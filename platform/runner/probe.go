package runner

import (
	"context"
	"time"
)

// The inbox check (design §5, step 1) runs before a message's side
// effect, so that a message whose id the inbox holds is acked without its
// handler running. Asked one message at a time it is a read transaction
// per message — more transactions than the writes it guards, which group
// commit merges. So the first worker to ask about a message asks about
// every message delivered and waiting with it in one query (a probe), and
// the workers that take the others later use its answer.
//
// An answer may be used only if nothing can have written the id to the
// inbox since: a copy of the id in flight in this runner is settled before
// the next copy is handled (see delivery), so a probe takes only messages
// whose earlier copy is settled (not blocked), and never answers for a
// copy delivered after it. What other instances commit meanwhile is the
// race every check has (one instance checks, another commits, then the
// first runs its handler): the check inside the handler's transaction
// keeps its effect from being committed twice. Answers older than
// maxProbeAge are not used, so that this race's window stays as short as
// it always was.

// maxProbeAge bounds how long after its query a probe's answer is used;
// an older one is asked again, alone.
const maxProbeAge = 250 * time.Millisecond

// probe is one query of the inbox for several messages' event ids.
type probe struct {
	done chan struct{} // closed once seen and err are set
	at   time.Time     // when the query began
	seen map[string]bool
	err  error
}

// processed answers the inbox check of d's message, whose decoded event id
// is id: from a probe's answer when there is a fresh one, else by a probe
// of d and the messages waiting with it.
func (r *Runner) processed(ctx context.Context, d *delivery, id string) (bool, error) {
	ir, ok := r.cfg.Store.(InboxReader)
	if !ok || d.key == "" || d.key != id {
		// The probe asks by the id as carried; one that reads differently
		// once decoded (an escaped header) is asked by its decoded id.
		return r.cfg.Store.Processed(ctx, r.cfg.Consumer.Durable, id)
	}
	r.mu.Lock()
	p := d.probe
	if p != nil {
		r.mu.Unlock()
		<-p.done
		if p.err != nil || time.Since(p.at) > maxProbeAge {
			return r.cfg.Store.Processed(ctx, r.cfg.Consumer.Durable, id)
		}
		return p.seen[id], nil
	}
	p = &probe{done: make(chan struct{})}
	ids := r.takeWaiting(d, p)
	r.mu.Unlock()
	p.at = time.Now()
	if len(ids) == 1 {
		var seen bool
		seen, p.err = r.cfg.Store.Processed(ctx, r.cfg.Consumer.Durable, id)
		p.seen = map[string]bool{id: seen}
	} else {
		p.seen, p.err = ir.ProcessedAny(ctx, r.cfg.Consumer.Durable, ids)
	}
	close(p.done)
	return p.seen[id], p.err
}

// takeWaiting gives p to d and to every delivered message not yet probed
// whose earlier copy is settled, and returns their ids (d's first). The
// others stay waiting. r.mu is held.
func (r *Runner) takeWaiting(d *delivery, p *probe) []string {
	d.probe = p
	ids := []string{d.key}
	keep := r.waiting[:0]
	for _, w := range r.waiting {
		switch {
		case w.probe != nil || w.settled:
		case w.blocked():
			keep = append(keep, w)
		default:
			w.probe = p
			ids = append(ids, w.key)
		}
	}
	clear(r.waiting[len(keep):])
	r.waiting = keep
	return ids
}

// wait lists d among the messages a probe may take. r.mu is held.
func (r *Runner) wait(d *delivery) {
	if len(r.waiting) >= 4*maxPullAhead {
		// Messages settled unprobed (dead-lettered, or left at Stop) are
		// dropped here when no probe came to drop them.
		keep := r.waiting[:0]
		for _, w := range r.waiting {
			if w.probe == nil && !w.settled {
				keep = append(keep, w)
			}
		}
		clear(r.waiting[len(keep):])
		r.waiting = keep
	}
	r.waiting = append(r.waiting, d)
}
