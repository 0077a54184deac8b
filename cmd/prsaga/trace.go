package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
)

// traceEntry is one line of a trace: a log line of a service, one of the
// ledger's transitions or recorded events, or a gap where nothing happened.
type traceEntry struct {
	Time      time.Time `json:"time"`
	Service   string    `json:"service,omitempty"`
	Kind      string    `json:"kind"` // log | transition | event | gap
	Level     string    `json:"level,omitempty"`
	What      string    `json:"what"`
	EventID   string    `json:"event_id,omitempty"`
	EventType string    `json:"event_type,omitempty"`
	TraceID   string    `json:"trace_id,omitempty"`
	// ToState is the state a transition (or a saga_transition log line)
	// moved to.
	ToState string `json:"to_state,omitempty"`
	// Seconds is, for a transition, how long the saga stayed in ToState
	// (until the next transition; omitted while it is still there); for a
	// gap, its length.
	Seconds float64 `json:"duration_seconds,omitempty"`
}

func (e traceEntry) key() string {
	return e.Kind + "\x00" + e.Service + "\x00" + strconv.FormatInt(e.Time.UnixNano(), 10) + "\x00" + e.What
}

// traceOptions are the flags of `prsaga trace`.
type traceOptions struct {
	id     string
	logs   string
	json   bool
	follow bool
	gap    time.Duration
	poll   time.Duration
}

// cmdTrace prints one timeline of a saga run, sorted by time: every
// service's JSON log lines that carry the correlation id (files
// <dir>/*.jsonl, rotated ones included) and the ledger's transitions and
// events of the run, with the time spent in each step and the gaps where
// nothing happened. --follow tails a running system until the run ends
// (MERGED or MERGE_FAILED) or the command is interrupted.
func cmdTrace(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var o traceOptions
	fs, load := newFlags("trace", getenv, stderr)
	fs.BoolVar(&o.json, "json", false, "print JSON: an array of entries (with --follow: one entry per line)")
	fs.BoolVar(&o.follow, "follow", false, "keep printing new lines until the run ends (MERGED or MERGE_FAILED) or interrupted")
	fs.DurationVar(&o.gap, "gap", 500*time.Millisecond, "show a pause of at least this long between two lines as a gap")
	fs.DurationVar(&o.poll, "poll", 500*time.Millisecond, "with --follow: how often to look for new lines")
	fs.StringVar(&o.logs, "logs", "", "directory of the services' <service>.jsonl log files (default $PRSAGA_LOG_DIR, else <data>/logs)")
	pos, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return parseError(err, stderr)
	}
	api := client.New(apiURLOf(fs, getenv, cfg), cfg.ClientToken())
	if len(pos) == 1 && contracts.ValidateEventID(pos[0]) != nil {
		// A PR id names its latest run.
		if _, _, err := contracts.ParsePRID(pos[0]); err == nil {
			s, err := api.Saga(ctx, pos[0])
			if err != nil {
				return apiFailed(stderr, "trace", err)
			}
			fmt.Fprintf(stderr, "prsaga trace: the latest run of %s is %s\n", s.PRID, s.CorrelationID)
			pos[0] = s.CorrelationID
		}
	}
	if len(pos) != 1 || contracts.ValidateEventID(pos[0]) != nil {
		fmt.Fprintln(stderr, "prsaga trace: name one correlation id (the id of the run's requested event) or a PR, e.g. 'acme/widgets#42' (its latest run)")
		return exitUsage
	}
	if o.poll <= 0 || o.gap <= 0 {
		fmt.Fprintln(stderr, "prsaga trace: --gap and --poll must be positive")
		return exitUsage
	}
	o.id = pos[0]
	if o.logs == "" {
		o.logs = cfg.LogDir
		if o.logs == "" {
			o.logs = filepath.Join(cfg.DataDir, "logs")
		}
	}
	src := &traceSource{api: api, logs: newLogReader(o.logs, o.id), id: o.id}
	if o.follow {
		return followTrace(ctx, src, o, stdout, stderr)
	}
	entries, prID := src.poll(ctx, stderr, true)
	if len(entries) == 0 {
		fmt.Fprintf(stderr, "prsaga trace: nothing found for %s (logs searched in %s)\n", o.id, o.logs)
		return exitFailed
	}
	entries = timeline(entries, o.gap)
	if o.json {
		printJSON(stdout, entries)
		return exitOK
	}
	printHeader(stdout, o.id, prID, entries)
	printEntries(stdout, entries, entries[0].Time)
	printSteps(stdout, entries)
	return exitOK
}

// traceSource is where a trace's lines come from: the ledger's API and
// the log files.
type traceSource struct {
	api  *client.Client
	logs *logReader
	id   string
	// said remembers the problems already reported, so that --follow
	// reports each once.
	said map[string]bool
}

// poll returns the ledger's record of the run (all of it, every time) and
// the log lines appended since the last poll. Problems go to stderr once.
func (s *traceSource) poll(ctx context.Context, stderr io.Writer, first bool) ([]traceEntry, string) {
	var out []traceEntry
	run, err := s.api.Run(ctx, s.id)
	var ae *client.APIError
	switch {
	case errors.As(err, &ae) && ae.Status == 404:
		if first {
			s.say(stderr, fmt.Sprintf("prsaga trace: the ledger has no run %s (yet); showing the logs", s.id))
		}
	case err != nil:
		if ctx.Err() == nil {
			s.say(stderr, fmt.Sprintf("prsaga trace: ledger: %v; showing the logs only", err))
		}
	default:
		out = append(out, ledgerEntries(run)...)
	}
	fromLogs, err := s.logs.read()
	if err != nil {
		s.say(stderr, fmt.Sprintf("prsaga trace: logs: %v", err))
	}
	return append(out, fromLogs...), run.PRID
}

func (s *traceSource) say(w io.Writer, msg string) {
	if s.said == nil {
		s.said = map[string]bool{}
	}
	if !s.said[msg] {
		s.said[msg] = true
		fmt.Fprintln(w, msg)
	}
}

// ledgerEntries turns the ledger's record of a run into trace entries.
func ledgerEntries(run client.Run) []traceEntry {
	var out []traceEntry
	for _, t := range run.Transitions {
		from := string(t.From)
		if from == "" {
			from = "·"
		}
		what := fmt.Sprintf("%s -> %s: %s", from, t.To, t.Reason)
		if t.Inferred {
			what += " (inferred)"
		}
		if t.Actor != "" {
			what += " [by " + t.Actor + "]"
		}
		out = append(out, traceEntry{Time: t.At, Service: "ledger", Kind: "transition", What: what, EventID: t.EventID, ToState: string(t.To)})
	}
	for _, e := range run.Events {
		var head struct {
			Source      string `json:"source"`
			TraceParent string `json:"traceparent"`
		}
		_ = json.Unmarshal(e.Event, &head)
		from := strings.TrimPrefix(head.Source, "/prsaga/")
		what := fmt.Sprintf("received %s %s from %s: %s", e.Type, e.EventID, from, e.Status)
		if e.Reason != "" {
			what += " (" + e.Reason + ")"
		}
		traceID, _, _ := logging.ParseTraceParent(head.TraceParent)
		out = append(out, traceEntry{Time: e.ReceivedAt, Service: "ledger", Kind: "event", What: what, EventID: e.EventID,
			EventType: e.Type, TraceID: traceID})
	}
	return out
}

// timeline sorts entries by time, sets each transition's time in its
// state, and inserts a gap entry wherever at least gap passed between two
// lines.
func timeline(entries []traceEntry, gap time.Duration) []traceEntry {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Time.Before(entries[j].Time) })
	ts := transitions(entries)
	for i, t := range ts {
		if i+1 < len(ts) {
			entries[t].Seconds = entries[ts[i+1]].Time.Sub(entries[t].Time).Seconds()
		}
	}
	out := make([]traceEntry, 0, len(entries)+4)
	for i, e := range entries {
		if i > 0 {
			if d := e.Time.Sub(entries[i-1].Time); d >= gap {
				out = append(out, gapEntry(entries[i-1].Time, d))
			}
		}
		out = append(out, e)
	}
	return out
}

func gapEntry(at time.Time, d time.Duration) traceEntry {
	return traceEntry{Time: at, Kind: "gap", What: "nothing happened for " + roundDuration(d), Seconds: d.Seconds()}
}

// transitions returns the indexes of the run's transitions in time order:
// the ledger's own, or — when the ledger could not be asked — its
// saga_transition log lines.
func transitions(entries []traceEntry) []int {
	var fromAPI, fromLogs []int
	for i, e := range entries {
		switch {
		case e.Kind == "transition":
			fromAPI = append(fromAPI, i)
		case e.Kind == "log" && e.ToState != "":
			fromLogs = append(fromLogs, i)
		}
	}
	if len(fromAPI) > 0 {
		return fromAPI
	}
	return fromLogs
}

// visit is one visit of a state.
type visit struct {
	State   string
	Start   time.Time
	Length  time.Duration
	Ongoing bool
}

// steps lists the run's visits of its states, in order.
func steps(entries []traceEntry) []visit {
	var out []visit
	ts := transitions(entries)
	for i, t := range ts {
		e := entries[t]
		s := visit{State: e.ToState, Start: e.Time}
		switch {
		case i+1 < len(ts):
			s.Length = entries[ts[i+1]].Time.Sub(e.Time)
		case contracts.State(e.ToState).InFlight():
			s.Ongoing = true
		default:
			continue // the end state: no duration
		}
		out = append(out, s)
	}
	return out
}

// runState is the state the run's last transition moved to ("" when none).
func runState(entries []traceEntry) string {
	last := ""
	var at time.Time
	for _, i := range transitions(entries) {
		if !entries[i].Time.Before(at) {
			last, at = entries[i].ToState, entries[i].Time
		}
	}
	return last
}

func traceIDOf(entries []traceEntry) string {
	for _, e := range entries {
		if e.TraceID != "" {
			return e.TraceID
		}
	}
	return ""
}

func printHeader(w io.Writer, id, prID string, entries []traceEntry) {
	var parts []string
	head := "run " + id
	if prID != "" {
		head += " of " + prID
	}
	if st := runState(entries); st != "" {
		parts = append(parts, st)
	}
	if len(entries) > 1 {
		parts = append(parts, "spans "+roundDuration(entries[len(entries)-1].Time.Sub(entries[0].Time)))
	}
	if t := traceIDOf(entries); t != "" {
		parts = append(parts, "trace "+t)
	}
	if len(parts) > 0 {
		head += ": " + strings.Join(parts, ", ")
	}
	fmt.Fprintln(w, head)
}

// printEntries prints a table of entries; +T is the time since start.
func printEntries(w io.Writer, entries []traceEntry, start time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\t+T\tSERVICE\tKIND\tWHAT")
	for _, e := range entries {
		fmt.Fprintln(tw, entryRow(e, start))
	}
	tw.Flush()
}

func entryRow(e traceEntry, start time.Time) string {
	what := e.What
	if e.Level != "" && e.Level != "INFO" {
		what = e.Level + " " + what
	}
	if e.Kind == "transition" && e.Seconds > 0 {
		what += " — " + roundDuration(time.Duration(e.Seconds*float64(time.Second))) + " in " + e.ToState
	}
	if e.Kind == "gap" {
		return fmt.Sprintf("\t\t\t···\t%s", what)
	}
	return fmt.Sprintf("%s\t+%s\t%s\t%s\t%s", e.Time.Local().Format("15:04:05.000"), roundDuration(e.Time.Sub(start)),
		e.Service, e.Kind, what)
}

// printSteps prints the time spent in each step.
func printSteps(w io.Writer, entries []traceEntry) {
	ss := steps(entries)
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "\nsteps:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var total time.Duration
	for _, s := range ss {
		length := roundDuration(s.Length)
		if s.Ongoing {
			length = "in progress"
		}
		total += s.Length
		fmt.Fprintf(tw, "  %s\t%s\n", s.State, length)
	}
	fmt.Fprintf(tw, "  total\t%s\n", roundDuration(total))
	tw.Flush()
}

// roundDuration keeps two or three significant digits.
func roundDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
