package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Dead letters as an operator sees them (design §3). Every command talks to
// NATS directly (PRSAGA_NATS_URL, else the dev server at
// nats://<PRSAGA_NATS_LISTEN>), not to the API: the DLQ must be readable
// when the services are not.
//
// Redrive publishes the original message — body and headers, without the
// Prsaga-Dlq-* headers — to its original subject again, once for all its
// dead letters (each consumer of the subject that gave up on it left one),
// with
//   - Nats-Msg-Id: redrive.<first dlq seq>.<original id>: new, so JetStream's
//     dedupe window does not drop it as the original, and the same for
//     every redrive of one dead letter, so a redrive repeated after a crash
//     (published, not yet deleted) is dropped as a duplicate;
//   - Prsaga-Redriven-From: PRSAGA_DLQ:<seq>[,<seq>...] and Prsaga-Redriven-Reason:
//     why it had been dead-lettered — the record of the redrive, kept with
//     the message in stream PRSAGA for as long as the stream keeps events;
//
// then deletes those dead letters from PRSAGA_DLQ, once JetStream has acked
// the publish. Consumers that already handled the original drop the copy
// in their inbox (same CloudEvent id); the one that dead-lettered it
// handles it now, or dead-letters it again (a new dead letter).

// Headers of a redriven message.
const (
	headerRedrivenFrom   = "Prsaga-Redriven-From"
	headerRedrivenReason = "Prsaga-Redriven-Reason"
	headerDLQSubject     = "Prsaga-Dlq-Subject" // set by bus.DeadLetter
)

// deadLetter is one message of PRSAGA_DLQ.
type deadLetter struct {
	Seq       uint64              `json:"seq"`
	Time      time.Time           `json:"time"`
	Consumer  string              `json:"consumer"`
	Subject   string              `json:"subject"` // the original's
	Reason    string              `json:"reason"`
	EventID   string              `json:"event_id,omitempty"`
	EventType string              `json:"event_type,omitempty"`
	Headers   map[string][]string `json:"headers,omitempty"`
	Body      *string             `json:"body,omitempty"`
	Body64    string              `json:"body_base64,omitempty"`

	raw *jetstream.RawStreamMsg
}

func deadLetterOf(m *jetstream.RawStreamMsg) deadLetter {
	d := deadLetter{Seq: m.Sequence, Time: m.Time.UTC(), Consumer: strings.TrimPrefix(m.Subject, contracts.DLQSubjectPrefix),
		Subject: m.Header.Get(headerDLQSubject), Reason: m.Header.Get(contracts.DLQReasonHeader), raw: m}
	for k, vs := range m.Header {
		switch strings.ToLower(k) {
		case "ce-id":
			d.EventID = vs[0]
		case "ce-type":
			d.EventType = vs[0]
		}
	}
	return d
}

// withContent adds the headers and body (as text when it is UTF-8).
func (d deadLetter) withContent() deadLetter {
	d.Headers = map[string][]string(d.raw.Header)
	if utf8.Valid(d.raw.Data) {
		s := string(d.raw.Data)
		d.Body = &s
	} else {
		d.Body64 = base64.StdEncoding.EncodeToString(d.raw.Data)
	}
	return d
}

func cmdDLQ(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga dlq list [--consumer C] [--limit N] | show <seq> | redrive <seq>... | redrive --all [--consumer C]  [--json]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, use)
		return exitUsage
	}
	if strings.HasPrefix(args[0], "-") {
		// dlq --help (or a flag before the verb): help, without connecting.
		fs, _ := newFlags("dlq", getenv, stderr)
		fs.Bool("json", false, "print JSON")
		fs.String("consumer", "", "only the dead letters of this consumer (list, redrive --all)")
		fs.Int("limit", 100, "list at most this many, oldest first")
		fs.Bool("all", false, "redrive every dead letter (of --consumer, if given)")
		if _, err := parseInterspersed(fs, args); err != nil {
			return parseError(err, stderr)
		}
		fmt.Fprintln(stderr, use)
		return exitUsage
	}
	verb := args[0]
	fs, load := newFlags("dlq "+verb, getenv, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	consumer := fs.String("consumer", "", "only the dead letters of this consumer (list, redrive --all)")
	limit := fs.Int("limit", 100, "list at most this many, oldest first")
	all := fs.Bool("all", false, "redrive every dead letter (of --consumer, if given)")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return parseError(err, stderr)
	}
	cfg, err := load()
	if err != nil {
		return parseError(err, stderr)
	}
	if strings.Trim(*consumer, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		fmt.Fprintf(stderr, "prsaga dlq: --consumer %q is not a consumer name\n", *consumer)
		return exitUsage
	}
	url := natsURLOf(fs, getenv, cfg)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: url, Name: "prsaga-dlq", CredsFile: cfg.NATSCreds,
		TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq: %v\n", err)
		refusedHint(stderr, err, "--nats-url / PRSAGA_NATS_URL (or --data to the directory `prsaga dev` runs in)")
		return exitFailed
	}
	defer b.Close()
	q := &dlq{b: b}
	switch verb {
	case "list":
		if len(pos) != 0 || *limit < 1 {
			fmt.Fprintln(stderr, use)
			return exitUsage
		}
		return q.list(ctx, *consumer, *limit, *asJSON, stdout, stderr)
	case "show":
		seqs, ok := parseSeqs(pos)
		if !ok || len(seqs) != 1 {
			fmt.Fprintln(stderr, "usage: prsaga dlq show <seq> [--json]")
			return exitUsage
		}
		return q.show(ctx, seqs[0], *asJSON, stdout, stderr)
	case "redrive":
		seqs, ok := parseSeqs(pos)
		if !ok || (len(seqs) == 0) == !*all {
			fmt.Fprintln(stderr, "usage: prsaga dlq redrive <seq>... | redrive --all [--consumer C]")
			return exitUsage
		}
		return q.redrive(ctx, seqs, *all, *consumer, *asJSON, stdout, stderr)
	}
	fmt.Fprintf(stderr, "prsaga dlq: unknown verb %q\n%s\n", verb, use)
	return exitUsage
}

func parseSeqs(pos []string) ([]uint64, bool) {
	var out []uint64
	for _, p := range pos {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || n == 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// dlq reads and redrives stream PRSAGA_DLQ.
type dlq struct{ b *bus.Bus }

// scan returns the dead letters from the oldest, at most limit (0: all).
func (q *dlq) scan(ctx context.Context, consumer string, limit int) ([]deadLetter, error) {
	s, err := q.b.JS.Stream(ctx, contracts.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", contracts.DLQStream, err)
	}
	filter := contracts.DLQSubjectPrefix + ">"
	if consumer != "" {
		filter = contracts.DLQSubject(consumer)
	}
	var out []deadLetter
	for seq := uint64(1); limit == 0 || len(out) < limit; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break // no message at or after seq
		}
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", contracts.DLQStream, seq, err)
		}
		out = append(out, deadLetterOf(m))
		seq = m.Sequence + 1
	}
	return out, nil
}

func (q *dlq) get(ctx context.Context, seq uint64) (deadLetter, error) {
	s, err := q.b.JS.Stream(ctx, contracts.DLQStream)
	if err != nil {
		return deadLetter{}, fmt.Errorf("stream %s: %w", contracts.DLQStream, err)
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return deadLetter{}, fmt.Errorf("no dead letter %d (redriven already, or never there)", seq)
	}
	if err != nil {
		return deadLetter{}, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return deadLetterOf(m), nil
}

func (q *dlq) list(ctx context.Context, consumer string, limit int, asJSON bool, stdout, stderr io.Writer) int {
	ds, err := q.scan(ctx, consumer, limit)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq list: %v\n", err)
		return exitFailed
	}
	if asJSON {
		if ds == nil {
			ds = []deadLetter{}
		}
		printJSON(stdout, ds)
		return exitOK
	}
	if len(ds) == 0 {
		fmt.Fprintln(stdout, "no dead letters")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCONSUMER\tSUBJECT\tREASON")
	for _, d := range ds {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", d.Seq, d.Time.Format(time.RFC3339), d.Consumer, d.Subject, clipReason(d.Reason))
	}
	_ = tw.Flush()
	return exitOK
}

// clipReason keeps a table row readable: one line, at most 100 runes.
func clipReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

func (q *dlq) show(ctx context.Context, seq uint64, asJSON bool, stdout, stderr io.Writer) int {
	d, err := q.get(ctx, seq)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq show: %v\n", err)
		return exitFailed
	}
	d = d.withContent()
	if asJSON {
		printJSON(stdout, d)
		return exitOK
	}
	fmt.Fprintf(stdout, "seq:      %d\ntime:     %s\nconsumer: %s\nsubject:  %s\nreason:   %s\nheaders:\n",
		d.Seq, d.Time.Format(time.RFC3339Nano), d.Consumer, d.Subject, d.Reason)
	keys := make([]string, 0, len(d.Headers))
	for k := range d.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range d.Headers[k] {
			fmt.Fprintf(stdout, "  %s: %s\n", k, v)
		}
	}
	fmt.Fprintln(stdout, "body:")
	if d.Body != nil {
		fmt.Fprintln(stdout, *d.Body)
	} else {
		fmt.Fprintf(stdout, "(not UTF-8; base64) %s\n", d.Body64)
	}
	return exitOK
}

// redriven is one redrive's outcome: one original published again for
// the dead letters (one per consumer that gave up on it) in Seqs.
type redriven struct {
	Seqs      []uint64 `json:"seqs"`
	Subject   string   `json:"subject"`
	MsgID     string   `json:"msg_id"`
	StreamSeq uint64   `json:"stream_seq"`
	Duplicate bool     `json:"duplicate"` // published by an earlier, interrupted redrive
	Error     string   `json:"error,omitempty"`
}

// origID is the id of the message d is a dead letter of: bus.DeadLetter
// names a dead letter dlq.<consumer>.<original id>.
func (d deadLetter) origID() string {
	id := strings.TrimPrefix(d.raw.Header.Get(bus.HeaderMsgID), "dlq."+d.Consumer+".")
	if id == "" {
		id = "none"
	}
	return id
}

// redrive publishes the originals of the chosen dead letters again. The
// dead letters of one original (every consumer of its subject that gave
// up on it) are redriven together: one publish reaches every consumer.
func (q *dlq) redrive(ctx context.Context, seqs []uint64, all bool, consumer string, asJSON bool, stdout, stderr io.Writer) int {
	ds, err := q.scan(ctx, "", 0)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq redrive: %v\n", err)
		return exitFailed
	}
	groups := map[string][]deadLetter{}
	key := func(d deadLetter) string { return d.Subject + "\x00" + d.origID() }
	for _, d := range ds {
		groups[key(d)] = append(groups[key(d)], d)
	}
	chosen := map[string]bool{}
	var order []string
	choose := func(d deadLetter) {
		if k := key(d); !chosen[k] {
			chosen[k] = true
			order = append(order, k)
		}
	}
	for _, d := range ds {
		if all && (consumer == "" || d.Consumer == consumer) {
			choose(d)
		}
	}
	for _, seq := range seqs {
		i := sort.Search(len(ds), func(i int) bool { return ds[i].Seq >= seq })
		if i == len(ds) || ds[i].Seq != seq {
			fmt.Fprintf(stderr, "prsaga dlq redrive: no dead letter %d (redriven already, or never there)\n", seq)
			return exitFailed
		}
		choose(ds[i])
	}
	code := exitOK
	var out []redriven
	for _, k := range order {
		r := q.redriveOne(ctx, groups[k])
		if r.Error != "" {
			code = exitFailed
			fmt.Fprintf(stderr, "prsaga dlq redrive %v: %s\n", r.Seqs, r.Error)
		} else if !asJSON {
			fmt.Fprintf(stdout, "redriven %v to %s (stream seq %d, msg id %s)\n", r.Seqs, r.Subject, r.StreamSeq, r.MsgID)
		}
		out = append(out, r)
	}
	if asJSON {
		if out == nil {
			out = []redriven{}
		}
		printJSON(stdout, out)
	}
	return code
}

// redriveOne publishes the original of the dead letters ds (one message,
// oldest first) again, then deletes them.
func (q *dlq) redriveOne(ctx context.Context, ds []deadLetter) redriven {
	d := ds[0]
	r := redriven{Subject: d.Subject}
	var from []string
	for _, x := range ds {
		r.Seqs = append(r.Seqs, x.Seq)
		from = append(from, strconv.FormatUint(x.Seq, 10))
	}
	if !inStream(d.Subject) {
		r.Error = fmt.Sprintf("original subject %q is not one of stream %s's", d.Subject, contracts.Stream)
		return r
	}
	r.MsgID = fmt.Sprintf("redrive.%d.%s", d.Seq, d.origID())
	h := nats.Header{}
	for k, vs := range d.raw.Header {
		switch {
		case strings.EqualFold(k, bus.HeaderMsgID), strings.EqualFold(k, contracts.DLQReasonHeader), strings.EqualFold(k, headerDLQSubject),
			strings.EqualFold(k, headerRedrivenFrom), strings.EqualFold(k, headerRedrivenReason):
			continue
		}
		h[k] = append([]string(nil), vs...)
	}
	h.Set(bus.HeaderMsgID, r.MsgID)
	h.Set(headerRedrivenFrom, contracts.DLQStream+":"+strings.Join(from, ","))
	h.Set(headerRedrivenReason, d.Reason)
	ack, err := q.b.PublishMsg(ctx, &nats.Msg{Subject: d.Subject, Header: h, Data: d.raw.Data})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.StreamSeq, r.Duplicate = ack.Sequence, ack.Duplicate
	s, err := q.b.JS.Stream(ctx, contracts.DLQStream)
	for _, x := range ds {
		if err == nil {
			err = s.DeleteMsg(ctx, x.Seq)
		}
	}
	if err != nil {
		r.Error = fmt.Sprintf("published (stream seq %d) but not deleted from %s: %v; redrive it again (the copy dedupes)", ack.Sequence, contracts.DLQStream, err)
	}
	return r
}

// inStream reports whether subject is one stream PRSAGA holds.
func inStream(subject string) bool {
	for _, p := range contracts.StreamSubjects {
		if prefix := strings.TrimSuffix(p, ">"); strings.HasPrefix(subject, prefix) && len(subject) > len(prefix) {
			return true
		}
	}
	return false
}
