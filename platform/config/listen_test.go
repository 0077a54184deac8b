package config_test

import (
	"errors"
	"flag"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/config"
)

// bind loads the configuration from env and the flags args, as a command
// does.
func bind(t *testing.T, env map[string]string, args ...string) (config.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	parse := config.Bind(fs, func(k string) string { return env[k] })
	if err := fs.Parse(append([]string{"--data", t.TempDir()}, args...)); err != nil {
		t.Fatal(err)
	}
	return parse()
}

// TestHTTPListenRule holds every HTTP listen setting, set by its variable
// and by its flag, to one rule: off loopback without PRSAGA_API_TOKEN the
// configuration is refused, naming the setting; on loopback, or with the
// token, it is accepted.
func TestHTTPListenRule(t *testing.T) {
	settings := config.HTTPListenSettings()
	if len(settings) < 6 {
		t.Fatalf("HTTPListenSettings: %v; want PRSAGA_HTTP_ADDR and one per service", settings)
	}
	for _, set := range settings {
		for _, addr := range []struct {
			addr     string
			loopback bool
		}{
			{"127.0.0.1:18081", true}, {"[::1]:18081", true}, {"localhost:18081", true},
			{"0.0.0.0:18081", false}, {":18081", false}, {"192.0.2.7:18081", false}, {"[::]:18081", false},
		} {
			for _, token := range []string{"", "operator-token"} {
				for _, via := range []string{"env", "flag"} {
					name := set.Env + "=" + addr.addr + "/" + via
					if token != "" {
						name += "/token"
					}
					t.Run(name, func(t *testing.T) {
						env := map[string]string{"PRSAGA_API_TOKEN": token}
						var args []string
						if via == "env" {
							env[set.Env] = addr.addr
						} else {
							args = []string{"--" + set.Flag, addr.addr}
						}
						c, err := bind(t, env, args...)
						refused := !addr.loopback && token == ""
						want := set.Env + ": " + addr.addr + " is not a loopback address, so PRSAGA_API_TOKEN is required"
						switch {
						case refused && (err == nil || !strings.Contains(err.Error(), want)):
							t.Fatalf("error %v; want one saying %q", err, want)
						case refused && strings.Count(err.Error(), "loopback") != 1:
							t.Errorf("error %v; want only %s refused", err, set.Env)
						case !refused && err != nil:
							t.Fatalf("error %v; want the configuration accepted", err)
						}
						if !slices.ContainsFunc(c.HTTPListeners(), func(l config.Listener) bool { return l.Setting == set && l.Addr == addr.addr }) {
							t.Errorf("HTTPListeners %v lack %s=%s", c.HTTPListeners(), set.Env, addr.addr)
						}
					})
				}
			}
		}
	}
}

// TestHTTPListenRuleJoinsEveryProblem: each listener off loopback is
// named, with a malformed one, in one error.
func TestHTTPListenRuleJoinsEveryProblem(t *testing.T) {
	_, err := bind(t, map[string]string{
		"PRSAGA_HTTP_ADDR":          "0.0.0.0:8080",
		"PRSAGA_LEDGER_HTTP_ADDR":   "0.0.0.0:8081",
		"PRSAGA_INDEXER_HTTP_ADDR":  "10.0.0.1:8082",
		"PRSAGA_NOTIFIER_HTTP_ADDR": "8083",
	})
	if err == nil {
		t.Fatal("accepted three listeners off loopback without a token")
	}
	for _, want := range []string{
		"PRSAGA_HTTP_ADDR: 0.0.0.0:8080 is not a loopback address, so PRSAGA_API_TOKEN is required",
		"PRSAGA_LEDGER_HTTP_ADDR: 0.0.0.0:8081 is not a loopback address, so PRSAGA_API_TOKEN is required",
		"PRSAGA_INDEXER_HTTP_ADDR: 10.0.0.1:8082 is not a loopback address, so PRSAGA_API_TOKEN is required",
		`PRSAGA_NOTIFIER_HTTP_ADDR: "8083" is not host:port`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 4 {
		t.Errorf("error %q: want the four problems joined", err)
	}
}

// TestHTTPListenIsAChecked: the address a process listens on is one of
// the checked ones — a service's own when it runs alone and has one.
func TestHTTPListenIsAChecked(t *testing.T) {
	c, err := bind(t, map[string]string{"PRSAGA_LEDGER_HTTP_ADDR": "127.0.0.1:8081"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		running []string
		env     string
		addr    string
	}{
		{nil, "PRSAGA_HTTP_ADDR", "127.0.0.1:8080"},
		{[]string{"ledger"}, "PRSAGA_LEDGER_HTTP_ADDR", "127.0.0.1:8081"},
		{[]string{"merger"}, "PRSAGA_HTTP_ADDR", "127.0.0.1:8080"},
		{[]string{"ledger", "merger"}, "PRSAGA_HTTP_ADDR", "127.0.0.1:8080"},
	} {
		l := c.HTTPListen(tc.running)
		if l.Env != tc.env || l.Addr != tc.addr {
			t.Errorf("HTTPListen(%v) = %s=%s, want %s=%s", tc.running, l.Env, l.Addr, tc.env, tc.addr)
		}
		if !slices.Contains(c.HTTPListeners(), l) {
			t.Errorf("HTTPListen(%v) = %v is not among the checked %v", tc.running, l, c.HTTPListeners())
		}
	}
}

// notHTTPListeners are the settings that name a listen address but not an
// HTTP one, each with where its exposure is decided.
var notHTTPListeners = map[string]string{
	"nats-listen": "the embedded NATS server's client port, not HTTP",
}

// TestEveryListenSettingIsHeldToTheRule fails when a setting that names a
// listen address (its usage says "listen", or its default is host:port) is not in HTTPListenSettings — so that a new listener, such
// as a metrics port, cannot be added without the rule.
func TestEveryListenSettingIsHeldToTheRule(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	config.Bind(fs, func(string) string { return "" })
	checked := map[string]bool{}
	for _, s := range config.HTTPListenSettings() {
		checked[s.Flag] = true
		if fs.Lookup(s.Flag) == nil {
			t.Errorf("HTTPListenSettings names --%s, which Bind does not register", s.Flag)
		}
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		usage := strings.ToLower(f.Usage)
		_, _, hostPort := net.SplitHostPort(f.DefValue)
		if !strings.Contains(usage, "listen") && hostPort != nil {
			return
		}
		n++
		if !checked[f.Name] && notHTTPListeners[f.Name] == "" {
			t.Errorf("--%s (%s) names a listen address but is not in config.HTTPListenSettings: Validate does not hold it to the loopback-or-token rule", f.Name, f.Usage)
		}
	})
	if n < len(checked) {
		t.Errorf("found %d listen settings, fewer than the %d checked: the test's notion of a listen setting is broken", n, len(checked))
	}
}

// The embedded NATS server has no users, so it listens on loopback only,
// token or not; a NATS URL (a server of its own, with accounts) lifts it.
func TestEmbeddedNATSListensOnLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"PRSAGA_NATS_LISTEN": "127.0.0.1:4222"}, true},
		{map[string]string{"PRSAGA_NATS_LISTEN": "[::1]:4222"}, true},
		{map[string]string{"PRSAGA_NATS_LISTEN": "-"}, true},
		{map[string]string{"PRSAGA_NATS_LISTEN": "0.0.0.0:4222", "PRSAGA_API_TOKEN": "a-long-operator-token"}, false},
		{map[string]string{"PRSAGA_NATS_LISTEN": ":4222"}, false},
		{map[string]string{"PRSAGA_NATS_LISTEN": "0.0.0.0:4222", "PRSAGA_NATS_URL": "nats://nats-1:4222"}, true},
	} {
		_, err := bind(t, tc.env)
		if got := err == nil; got != tc.want {
			t.Errorf("%v: accepted=%v (%v), want %v", tc.env, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "PRSAGA_NATS_LISTEN") {
			t.Errorf("%v: error %q does not name PRSAGA_NATS_LISTEN", tc.env, err)
		}
	}
}
