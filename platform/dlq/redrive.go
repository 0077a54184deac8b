package dlq

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Redrive publishes the original message — body and headers, without the
// dead-letter headers — to its original subject again, once for all its
// dead letters (each consumer of the subject that gave up on it left one),
// with
//   - Nats-Msg-Id: redrive.<first dlq seq>.<original id>: new, so
//     JetStream's dedupe window does not drop it as the original, and the
//     same for every redrive of one dead letter, so a redrive repeated
//     after a crash (published, not yet deleted) is dropped as a duplicate;
//   - contracts.RedrivenFromHeader and contracts.RedrivenReasonHeader: the
//     record of the redrive, kept with the message in stream PRSAGA for as
//     long as the stream keeps events;
//
// then deletes those dead letters from PRSAGA_DLQ, once JetStream has
// acked the publish. Consumers that already handled the original drop the
// copy in their inbox (same CloudEvent id); the one that dead-lettered it
// handles it now, or dead-letters it again (a new dead letter).

// Selection names the dead letters to redrive: Seqs, and with All every
// dead letter (of Consumer only, when it is not empty).
type Selection struct {
	Seqs     []uint64
	All      bool
	Consumer string
}

// Original is a message that was dead-lettered, with its dead letters:
// one per consumer that gave up on it, oldest first.
type Original struct {
	Subject string // where it was published
	ID      string // its Nats-Msg-Id; "none" when it had none
	Letters []Letter
}

// Redriven is the outcome of redriving one Original, filled as far as
// the redrive got. The JSON form is what `prsaga dlq redrive --json`
// prints.
type Redriven struct {
	Seqs      []uint64 `json:"seqs"`
	Subject   string   `json:"subject"`
	MsgID     string   `json:"msg_id"`
	StreamSeq uint64   `json:"stream_seq"`
	Duplicate bool     `json:"duplicate"` // published by an earlier, interrupted redrive
}

// Plan returns the originals of the selected dead letters, each once, in
// the order of their oldest selected dead letter (All first, then Seqs),
// with all their dead letters — selected or not: one publish reaches
// every consumer of the subject. A seq that is not in the DLQ fails the
// whole plan (an error wrapping ErrNotFound): nothing is redriven.
func (q *Queue) Plan(ctx context.Context, sel Selection) ([]Original, error) {
	ls, err := q.Scan(ctx, "", 0)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*Original{}
	key := func(l Letter) string { return l.Subject + "\x00" + l.origID() }
	for _, l := range ls {
		o := byKey[key(l)]
		if o == nil {
			o = &Original{Subject: l.Subject, ID: l.origID()}
			byKey[key(l)] = o
		}
		o.Letters = append(o.Letters, l)
	}
	chosen := map[string]bool{}
	var out []Original
	choose := func(l Letter) {
		if k := key(l); !chosen[k] {
			chosen[k] = true
			out = append(out, *byKey[k])
		}
	}
	for _, l := range ls {
		if sel.All && (sel.Consumer == "" || l.Consumer == sel.Consumer) {
			choose(l)
		}
	}
	for _, seq := range sel.Seqs {
		i := sort.Search(len(ls), func(i int) bool { return ls[i].Seq >= seq })
		if i == len(ls) || ls[i].Seq != seq {
			return nil, notFound(seq)
		}
		choose(ls[i])
	}
	return out, nil
}

// Redrive publishes o again and deletes its dead letters (see the top of
// this file). Repeating it after an error is safe: the copy dedupes.
func (q *Queue) Redrive(ctx context.Context, o Original) (Redriven, error) {
	if len(o.Letters) == 0 {
		return Redriven{Subject: o.Subject}, errors.New("no dead letters to redrive")
	}
	first := o.Letters[0]
	r := Redriven{Subject: o.Subject}
	var from []string
	for _, l := range o.Letters {
		r.Seqs = append(r.Seqs, l.Seq)
		from = append(from, strconv.FormatUint(l.Seq, 10))
	}
	if !inStream(o.Subject) {
		return r, fmt.Errorf("original subject %q is not one of stream %s's", o.Subject, contracts.Stream)
	}
	r.MsgID = fmt.Sprintf("redrive.%d.%s", first.Seq, o.ID)
	h := nats.Header{}
	for k, vs := range first.Header {
		switch {
		case strings.EqualFold(k, bus.HeaderMsgID), strings.EqualFold(k, contracts.DLQReasonHeader), strings.EqualFold(k, contracts.DLQSubjectHeader),
			strings.EqualFold(k, contracts.RedrivenFromHeader), strings.EqualFold(k, contracts.RedrivenReasonHeader):
			continue
		}
		h[k] = append([]string(nil), vs...)
	}
	h.Set(bus.HeaderMsgID, r.MsgID)
	h.Set(contracts.RedrivenFromHeader, contracts.DLQStream+":"+strings.Join(from, ","))
	h.Set(contracts.RedrivenReasonHeader, first.Reason)
	ack, err := q.b.PublishMsg(ctx, &nats.Msg{Subject: o.Subject, Header: h, Data: first.Data})
	if err != nil {
		return r, err
	}
	r.StreamSeq, r.Duplicate = ack.Sequence, ack.Duplicate
	s, err := q.b.JS.Stream(ctx, contracts.DLQStream)
	for _, l := range o.Letters {
		if err == nil {
			err = s.DeleteMsg(ctx, l.Seq)
		}
	}
	if err != nil {
		return r, fmt.Errorf("published (stream seq %d) but not deleted from %s: %v; redrive it again (the copy dedupes)", ack.Sequence, contracts.DLQStream, err)
	}
	return r, nil
}

// inStream reports whether subject is one stream PRSAGA holds: a redrive
// must not publish where no consumer of ours would see it.
func inStream(subject string) bool {
	for _, p := range contracts.StreamSubjects {
		if prefix := strings.TrimSuffix(p, ">"); strings.HasPrefix(subject, prefix) && len(subject) > len(prefix) {
			return true
		}
	}
	return false
}
