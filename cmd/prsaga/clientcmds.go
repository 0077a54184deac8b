package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// clientFlags parses a client verb's flags and returns the API client.
func clientFlags(name string, args []string, getenv func(string) string, stderr io.Writer, extra func(fs *flag.FlagSet)) (*client.Client, []string, bool, int) {
	fs, load := newFlags(name, getenv, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if extra != nil {
		extra(fs)
	}
	pos, cfg, err := parseConfig(fs, load, args)
	if err != nil {
		return nil, nil, false, parseError(err, stderr)
	}
	return client.New(apiURLOf(fs, getenv, cfg), cfg.ClientToken()), pos, *asJSON, -1
}

func apiFailed(stderr io.Writer, verb string, err error) int {
	fmt.Fprintf(stderr, "prsaga %s: %v\n", verb, err)
	refusedHint(stderr, err, "--api / PRSAGA_API_URL (or --data to the directory `prsaga dev` runs in)")
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Status == 404 {
		return exitFailed
	}
	return exitFailed
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func cmdMerge(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var r contracts.Request
	var wait time.Duration
	c, _, asJSON, code := clientFlags("merge", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&r.Repo, "repo", "", "repository owner/name")
		fs.IntVar(&r.PRNumber, "pr", 0, "PR number")
		fs.StringVar(&r.SourceBranch, "source", "", "source branch")
		fs.StringVar(&r.TargetBranch, "target", "main", "target branch")
		fs.StringVar(&r.HeadSHA, "head", "", "the 40-hex head commit the user saw")
		fs.StringVar(&r.Strategy, "strategy", contracts.StrategyMerge, "merge | squash | fast-forward")
		fs.StringVar(&r.Title, "title", "", "PR title")
		fs.StringVar(&r.RequestedBy, "by", "cli", "who requests the merge")
		fs.DurationVar(&wait, "wait", 0, "wait up to this long for MERGED or MERGE_FAILED")
	})
	if code >= 0 {
		return code
	}
	r.PRID = contracts.PRID(r.Repo, r.PRNumber)
	if err := r.Validate(); err != nil {
		fmt.Fprintf(stderr, "prsaga merge: %s\nrun `prsaga merge --help` for its flags\n", strings.Join(flagProblems(err), "; "))
		return exitUsage
	}
	acc, err := c.Merge(ctx, r)
	if err != nil {
		return apiFailed(stderr, "merge", err)
	}
	if wait <= 0 {
		if asJSON {
			printJSON(stdout, acc)
		} else {
			fmt.Fprintf(stdout, "requested %s: event %s (correlation id %s)\n", acc.PRID, acc.EventID, acc.CorrelationID)
		}
		return exitOK
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, err := c.Wait(wctx, acc.PRID, acc.CorrelationID)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga merge: %v\n", err)
		return exitTimeout
	}
	printSaga(stdout, s, asJSON, retryHint(ctx, c, s))
	if s.State != contracts.StateMerged {
		return exitFailed
	}
	return exitOK
}

func onePR(verb string, pos []string, stderr io.Writer) (string, bool) {
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "prsaga %s: name one PR, e.g. acme/widgets#42\n", verb)
		return "", false
	}
	if _, _, err := contracts.ParsePRID(pos[0]); err != nil {
		fmt.Fprintf(stderr, "prsaga %s: %v\n", verb, err)
		return "", false
	}
	return pos[0], true
}

// oneSaga is the start of the verbs about one PR's saga: the client
// flags, the PR argument and the saga from the API. A code >= 0 ends the
// command with it.
func oneSaga(ctx context.Context, verb string, args []string, getenv func(string) string, stderr io.Writer) (*client.Client, client.Saga, bool, int) {
	c, pos, asJSON, code := clientFlags(verb, args, getenv, stderr, nil)
	if code >= 0 {
		return nil, client.Saga{}, false, code
	}
	pr, ok := onePR(verb, pos, stderr)
	if !ok {
		return nil, client.Saga{}, false, exitUsage
	}
	s, err := c.Saga(ctx, pr)
	if err != nil {
		return nil, client.Saga{}, false, apiFailed(stderr, verb, err)
	}
	return c, s, asJSON, -1
}

func cmdStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, s, asJSON, code := oneSaga(ctx, "status", args, getenv, stderr)
	if code >= 0 {
		return code
	}
	printSaga(stdout, s, asJSON, retryHint(ctx, c, s))
	return exitOK
}

func cmdHistory(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	_, s, asJSON, code := oneSaga(ctx, "history", args, getenv, stderr)
	if code >= 0 {
		return code
	}
	if asJSON {
		printJSON(stdout, s.Transitions)
		return exitOK
	}
	printTimeline(stdout, s)
	return exitOK
}

func cmdList(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var state, repo, cursor string
	var limit int
	var stuck bool
	c, _, asJSON, code := clientFlags("list", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&state, "state", "", "only sagas in this state")
		fs.StringVar(&repo, "repo", "", "only this repository")
		fs.BoolVar(&stuck, "stuck", false, "only sagas the watchdog's next tick fails (in flight past their step timeout)")
		fs.StringVar(&cursor, "cursor", "", "continue from a previous page")
		fs.IntVar(&limit, "limit", 50, "sagas per page")
	})
	if code >= 0 {
		return code
	}
	if state != "" {
		if _, err := contracts.ParseState(state); err != nil {
			fmt.Fprintf(stderr, "prsaga list: %v\n", err)
			return exitUsage
		}
	}
	l, err := c.ListFiltered(ctx, client.Filter{State: state, Repo: repo, Cursor: cursor, Limit: limit, Stuck: stuck})
	if err != nil {
		return apiFailed(stderr, "list", err)
	}
	if asJSON {
		printJSON(stdout, l)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PR\tSTATE\tFAILED STEP\tATTEMPTS\tMERGED\tUPDATED")
	for _, s := range l.Sagas {
		st := s.State
		if s.Stuck {
			st += " (stuck)"
		}
		failed := dash(string(s.FailedStep))
		if s.TimedOut {
			failed += " (timed out)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%s\n", s.PRID, st, failed, s.Attempts, s.Merged, s.UpdatedAt.Local().Format(time.DateTime))
	}
	if len(l.Sagas) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	tw.Flush()
	if l.NextCursor != "" {
		fmt.Fprintf(stdout, "more: --cursor %s\n", l.NextCursor)
	}
	return exitOK
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printSaga prints one saga; hint is the retry that will work (retryHint).
func printSaga(w io.Writer, s client.Saga, asJSON bool, hint string) {
	if asJSON {
		printJSON(w, s)
		return
	}
	fmt.Fprintf(w, "%s  %s", s.PRID, s.State)
	if s.FailedStep != "" {
		fmt.Fprintf(w, " at %s", s.FailedStep)
	}
	if s.TimedOut {
		fmt.Fprint(w, " (timed out: the step may still be working)")
	}
	if s.Stuck {
		fmt.Fprint(w, " (stuck: the watchdog fails it on its next tick)")
	}
	fmt.Fprintln(w)
	target := s.TargetBranch
	if target == "" {
		target = "the target branch"
	}
	switch {
	case s.Merged && s.AlreadyMerged:
		fmt.Fprintf(w, "  the code IS merged into %s at %s — it was already there before this run (nothing new was merged)\n", target, s.MergeSHA)
	case s.Merged:
		fmt.Fprintf(w, "  the code IS merged into %s at %s\n", target, s.MergeSHA)
	default:
		fmt.Fprintf(w, "  the code is NOT merged into %s\n", target)
	}
	if hint != "" {
		fmt.Fprintf(w, "  next: %s\n", hint)
	}
	if s.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", s.LastError)
	}
	fmt.Fprintf(w, "  attempts %d, correlation id %s, updated %s\n", s.Attempts, s.CorrelationID, s.UpdatedAt.Local().Format(time.DateTime))
}

func printTimeline(w io.Writer, s client.Saga) {
	fmt.Fprintf(w, "%s (%s, correlation id %s)\n", s.PRID, s.State, s.CorrelationID)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tAT\tIN STATE\tFROM\tTO\tBY\tREASON")
	for i, t := range s.Transitions {
		stay := ""
		switch {
		case i+1 < len(s.Transitions):
			stay = s.Transitions[i+1].At.Sub(t.At).Round(time.Millisecond).String()
		case t.To.InFlight():
			stay = time.Since(t.At).Round(time.Millisecond).String() + " so far"
		}
		from := string(t.From)
		if from == "" {
			from = "·"
		}
		reason := t.Reason
		if t.Inferred {
			reason += " (inferred)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Seq, t.At.Local().Format("15:04:05.000"), stay, from, t.To, dash(t.Actor), reason)
	}
	tw.Flush()
}
