package fault

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	rules, err := Parse(" merger.after-effect=exit , notifier.mid-delivery=error@3,relay.merger.after-publish=error@2+")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"merger.after-effect=exit@1", "notifier.mid-delivery=error@3", "relay.merger.after-publish=error@2+"}
	if len(rules) != len(want) {
		t.Fatalf("rules %v, want %v", rules, want)
	}
	for i, r := range rules {
		if r.String() != want[i] {
			t.Errorf("rule %d: %s, want %s", i, r, want[i])
		}
	}
	if rules, err := Parse(""); err != nil || rules != nil {
		t.Errorf("empty: %v %v", rules, err)
	}
	for _, bad := range []string{"x", "x=", "=exit", "x=kill", "x=exit@0", "x=exit@-1", "x=exit@y", "x=error@", "X=exit",
		"a b=exit", "x=exit,x=error", "x=exit@1++", strings.Repeat("a", 129) + "=exit"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), Env) {
			t.Errorf("Parse(%q): %v does not name %s", bad, err, Env)
		}
	}
}

func TestHitFiresOnTheNthHit(t *testing.T) {
	disarm := Arm(Rule{Point: "a", Action: Error, Nth: 3}, Rule{Point: "b", Action: Error, Nth: 2, From: true})
	defer disarm()
	var fired []string
	for i := 1; i <= 5; i++ {
		for _, p := range []string{"a", "b", "c"} {
			if err := Hit(p); err != nil {
				if !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), p) {
					t.Errorf("Hit(%s): %v", p, err)
				}
				fired = append(fired, p+string(rune('0'+i)))
			}
		}
	}
	if got := strings.Join(fired, " "); got != "b2 a3 b3 b4 b5" {
		t.Errorf("fired %q, want %q", got, "b2 a3 b3 b4 b5")
	}
	disarm()
	if Enabled() || Hit("b") != nil {
		t.Error("still armed after disarm")
	}
}

func TestExitAction(t *testing.T) {
	var code int
	exit = func(c int) { code = c }
	defer func() { exit = osExit }()
	defer Arm(Rule{Point: "x", Action: Exit})()
	if err := Hit("x"); code != ExitCode {
		t.Errorf("exit action: err %v, exit status %d, want %d", err, code, ExitCode)
	}
	code = 0
	_ = Hit("x")
	if code != 0 {
		t.Error("exit@1 fired on the second hit")
	}
}

func TestSetupAndUnknown(t *testing.T) {
	env := map[string]string{Env: "t.registered=error,t.typo=exit"}
	rules, err := Setup(func(k string) string { return env[k] })
	if err != nil || len(rules) != 2 {
		t.Fatalf("Setup: %v %v", rules, err)
	}
	defer Arm()
	Register("t.registered")
	if u := Unknown(); len(u) != 1 || u[0] != "t.typo" {
		t.Errorf("Unknown() = %v, want [t.typo]", u)
	}
	found := false
	for _, p := range Points() {
		found = found || p == "t.registered"
	}
	if !found {
		t.Errorf("Points() = %v lacks t.registered", Points())
	}
	if rules, err := Setup(func(string) string { return "" }); err != nil || rules != nil {
		t.Errorf("unset: %v %v", rules, err)
	}
}

func TestNames(t *testing.T) {
	if AfterEffect("merger") != "merger.after-effect" || AfterCommit("ledger") != "ledger.after-commit" ||
		AfterPublish("merger") != "relay.merger.after-publish" {
		t.Error("point names changed: docs/operating.md and PRSAGA_FAULTS users depend on them")
	}
}

func BenchmarkHitDisarmed(b *testing.B) {
	Arm()
	for b.Loop() {
		if Hit("merger.after-effect") != nil {
			b.Fatal("fired")
		}
	}
}
