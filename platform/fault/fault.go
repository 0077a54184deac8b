// Package fault holds named fault points: places in the runner, the outbox
// relay and the steps where a crash test makes the process die or a call
// fail (issue 7). Code calls Hit(point) at each point; a test arms points
// with Arm (in-process) or PRSAGA_FAULTS (a `prsaga serve` or `dev`
// process, read once at start by Setup).
//
// Disarmed — always, unless a test or the operator asked — Hit is one
// atomic load and returns nil.
//
// The syntax of PRSAGA_FAULTS is a comma-separated list of rules
//
//	<point>=<action>[@<n>[+]]
//
// action is exit (the process exits at once with ExitCode, no deferred
// cleanup, as after a SIGKILL) or error (Hit returns an error wrapping
// ErrInjected: the caller fails there as it would on an I/O error). @n
// fires at the point's n-th hit in this process only (default @1: the
// first); @n+ fires at the n-th hit and every later one. Example:
//
//	PRSAGA_FAULTS=merger.after-effect=exit,notifier.mid-delivery=error@2
//
// Points (docs/operating.md lists them all): <consumer>.after-effect,
// <consumer>.after-commit, relay.<service>.after-publish,
// notifier.mid-delivery.
package fault

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Env is the variable Setup reads.
const Env = "PRSAGA_FAULTS"

// ExitCode is the exit status of an exit action: distinct from every exit
// status of prsaga's commands, so a test tells an injected death from a
// crash.
const ExitCode = 86

// ErrInjected is wrapped by the error an error action returns.
var ErrInjected = errors.New("injected fault")

// Action is what an armed point does when it fires.
type Action int

// Actions.
const (
	Error Action = iota + 1 // Hit returns an error wrapping ErrInjected
	Exit                    // the process exits with ExitCode
)

func (a Action) String() string {
	switch a {
	case Error:
		return "error"
	case Exit:
		return "exit"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Rule arms one point.
type Rule struct {
	Point  string
	Action Action
	// Nth is the hit that fires (1-based; 0 means 1); with From set, that
	// hit and every later one fire.
	Nth  int
	From bool
}

func (r Rule) String() string {
	s := r.Point + "=" + r.Action.String() + "@" + strconv.Itoa(max(r.Nth, 1))
	if r.From {
		s += "+"
	}
	return s
}

// armed is one armed point and its hit count.
type armed struct {
	rule Rule
	hits atomic.Int64
}

// osExit is os.Exit, kept for the tests that replace exit.
var osExit = os.Exit

// table is what is armed; replaced whole, never changed in place.
type table map[string]*armed

var (
	current atomic.Pointer[table]
	// exit is os.Exit; a test of this package replaces it.
	exit = osExit

	mu         sync.Mutex
	registered = map[string]bool{}
)

// Hit is a fault point. It returns nil unless the point is armed and this
// hit fires: then it exits the process (Exit) or returns an error wrapping
// ErrInjected (Error).
func Hit(point string) error {
	t := current.Load()
	if t == nil {
		return nil
	}
	a := (*t)[point]
	if a == nil {
		return nil
	}
	n := int(a.hits.Add(1))
	nth := max(a.rule.Nth, 1)
	if n < nth || n > nth && !a.rule.From {
		return nil
	}
	if a.rule.Action == Exit {
		fmt.Fprintf(os.Stderr, "prsaga: fault point %s fired (hit %d): exiting with status %d\n", point, n, ExitCode)
		exit(ExitCode)
	}
	return fmt.Errorf("%w at %s (hit %d)", ErrInjected, point, n)
}

// Enabled reports whether any point is armed.
func Enabled() bool { return current.Load() != nil }

// Arm arms the rules (replacing whatever was armed, hit counts reset) and
// returns a function that disarms them again. Tests call it; processes
// call Setup.
func Arm(rules ...Rule) (disarm func()) {
	if len(rules) == 0 {
		current.Store(nil)
		return func() {}
	}
	t := make(table, len(rules))
	for _, r := range rules {
		t[r.Point] = &armed{rule: r}
	}
	current.Store(&t)
	return func() { current.CompareAndSwap(&t, nil) }
}

// Parse reads the PRSAGA_FAULTS syntax; "" is no rules.
func Parse(spec string) ([]Rule, error) {
	var rules []Rule
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		point, action, ok := strings.Cut(part, "=")
		point, action = strings.TrimSpace(point), strings.TrimSpace(action)
		if !ok || point == "" || action == "" {
			return nil, fmt.Errorf("%s: %q is not <point>=<action>[@<n>[+]]", Env, part)
		}
		if err := validPoint(point); err != nil {
			return nil, fmt.Errorf("%s: %w", Env, err)
		}
		if seen[point] {
			return nil, fmt.Errorf("%s: point %s armed twice", Env, point)
		}
		seen[point] = true
		r := Rule{Point: point, Nth: 1}
		name, nth, hasN := strings.Cut(action, "@")
		switch name {
		case "exit":
			r.Action = Exit
		case "error":
			r.Action = Error
		default:
			return nil, fmt.Errorf("%s: %s: unknown action %q (exit or error)", Env, point, name)
		}
		if hasN {
			nth, r.From = strings.CutSuffix(nth, "+")
			n, err := strconv.Atoi(nth)
			if err != nil || n < 1 || n > 1_000_000 {
				return nil, fmt.Errorf("%s: %s: hit %q is not a number from 1 to 1000000", Env, point, nth)
			}
			r.Nth = n
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func validPoint(p string) error {
	if len(p) > 128 {
		return fmt.Errorf("point name of %d bytes (at most 128)", len(p))
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("point %q: only a-z, 0-9 and .-_ are allowed", p)
		}
	}
	return nil
}

// Setup arms what the value of PRSAGA_FAULTS (as getenv returns it) asks
// for, once at process start. It returns the rules armed (none: nil).
func Setup(getenv func(string) string) ([]Rule, error) {
	rules, err := Parse(getenv(Env))
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	Arm(rules...)
	return rules, nil
}

// Register declares a point that exists in this process (the runner, the
// relay and the steps register theirs as they start), so that Points can
// list them and Unknown can tell an armed point nobody hits (a typo).
func Register(points ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, p := range points {
		registered[p] = true
	}
}

// Points lists the points registered in this process, sorted.
func Points() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(registered))
	for p := range registered {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Unknown lists the armed points no code registered, sorted.
func Unknown() []string {
	t := current.Load()
	if t == nil {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for p := range *t {
		if !registered[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Names of the points; a consumer's or a relay's name is part of its own.
const (
	suffixAfterEffect  = ".after-effect"
	suffixAfterCommit  = ".after-commit"
	suffixAfterPublish = ".after-publish"
	// MidDelivery fires in the notifier when one watcher's webhook was
	// answered 2xx, before the others of the round are known delivered
	// and before anything is committed.
	MidDelivery = "notifier.mid-delivery"
)

// AfterEffect names the point of a consumer where its side effect is done
// and nothing is committed (for the merger: the ref updated, its outbox
// row not inserted).
func AfterEffect(consumer string) string { return consumer + suffixAfterEffect }

// AfterCommit names the point of a consumer where its transaction is
// committed and the message not acked.
func AfterCommit(consumer string) string { return consumer + suffixAfterCommit }

// AfterPublish names the point of a service's relay where a row is
// published and acked by JetStream, not marked sent.
func AfterPublish(service string) string { return "relay." + service + suffixAfterPublish }
