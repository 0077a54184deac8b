package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/prsaga/prsaga/platform/dlq"
)

// Dead letters as an operator sees them (design §3): platform/dlq reads
// and redrives them; this file parses the verbs and prints. Every command
// talks to NATS directly (PRSAGA_NATS_URL, else the dev server at
// nats://<PRSAGA_NATS_LISTEN>), not to the API: the DLQ must be readable
// when the services are not.

// shownLetter is a dead letter as `dlq show` prints it: with its headers
// and body (as text when it is UTF-8).
type shownLetter struct {
	dlq.Letter
	Headers map[string][]string `json:"headers,omitempty"`
	Body    *string             `json:"body,omitempty"`
	Body64  string              `json:"body_base64,omitempty"`
}

func showLetter(l dlq.Letter) shownLetter {
	d := shownLetter{Letter: l, Headers: map[string][]string(l.Header)}
	if utf8.Valid(l.Data) {
		s := string(l.Data)
		d.Body = &s
	} else {
		d.Body64 = base64.StdEncoding.EncodeToString(l.Data)
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
	pos, cfg, err := parseConfig(fs, load, args[1:])
	if err != nil {
		return parseError(err, stderr)
	}
	if !dlq.ValidConsumer(*consumer) {
		fmt.Fprintf(stderr, "prsaga dlq: --consumer %q is not a consumer name\n", *consumer)
		return exitUsage
	}
	url := natsURLOf(fs, getenv, cfg)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, ok := dialBus(ctx, cfg, url, "dlq", "--nats-url / PRSAGA_NATS_URL (or --data to the directory `prsaga dev` runs in)", stderr)
	if !ok {
		return exitFailed
	}
	defer b.Close()
	q := dlq.New(b)
	switch verb {
	case "list":
		if len(pos) != 0 || *limit < 1 {
			fmt.Fprintln(stderr, use)
			return exitUsage
		}
		return dlqList(ctx, q, *consumer, *limit, *asJSON, stdout, stderr)
	case "show":
		seqs, ok := parseSeqs(pos)
		if !ok || len(seqs) != 1 {
			fmt.Fprintln(stderr, "usage: prsaga dlq show <seq> [--json]")
			return exitUsage
		}
		return dlqShow(ctx, q, seqs[0], *asJSON, stdout, stderr)
	case "redrive":
		seqs, ok := parseSeqs(pos)
		if !ok || (len(seqs) == 0) == !*all {
			fmt.Fprintln(stderr, "usage: prsaga dlq redrive <seq>... | redrive --all [--consumer C]")
			return exitUsage
		}
		return dlqRedrive(ctx, q, dlq.Selection{Seqs: seqs, All: *all, Consumer: *consumer}, *asJSON, stdout, stderr)
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

func dlqList(ctx context.Context, q *dlq.Queue, consumer string, limit int, asJSON bool, stdout, stderr io.Writer) int {
	ds, err := q.Scan(ctx, consumer, limit)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq list: %v\n", err)
		return exitFailed
	}
	if asJSON {
		if ds == nil {
			ds = []dlq.Letter{}
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

func dlqShow(ctx context.Context, q *dlq.Queue, seq uint64, asJSON bool, stdout, stderr io.Writer) int {
	l, err := q.Get(ctx, seq)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq show: %v\n", err)
		return exitFailed
	}
	d := showLetter(l)
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

// redriven is one redrive's outcome as `dlq redrive --json` prints it.
type redriven struct {
	dlq.Redriven
	Error string `json:"error,omitempty"`
}

// dlqRedrive redrives the originals of the selected dead letters, one
// publish each, and prints each outcome as it comes.
func dlqRedrive(ctx context.Context, q *dlq.Queue, sel dlq.Selection, asJSON bool, stdout, stderr io.Writer) int {
	plan, err := q.Plan(ctx, sel)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga dlq redrive: %v\n", err)
		return exitFailed
	}
	code := exitOK
	var out []redriven
	for _, o := range plan {
		r, err := q.Redrive(ctx, o)
		res := redriven{Redriven: r}
		if err != nil {
			res.Error = err.Error()
			code = exitFailed
			fmt.Fprintf(stderr, "prsaga dlq redrive %v: %s\n", r.Seqs, res.Error)
		} else if !asJSON {
			fmt.Fprintf(stdout, "redriven %v to %s (stream seq %d, msg id %s)\n", r.Seqs, r.Subject, r.StreamSeq, r.MsgID)
		}
		out = append(out, res)
	}
	if asJSON {
		if out == nil {
			out = []redriven{}
		}
		printJSON(stdout, out)
	}
	return code
}
