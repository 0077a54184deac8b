package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/prsaga/prsaga/contracts"
)

// Setting names one setting: its flag and its environment variable.
type Setting struct {
	Flag, Env string
}

// Listener is an HTTP listen address and the setting that gave it.
type Listener struct {
	Setting
	Addr string
}

// services are the services with a listen address of their own.
var services = []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger}

// httpListen is the HTTP listen address of a process.
var httpListen = Setting{Flag: "http", Env: "PRSAGA_HTTP_ADDR"}

// serviceListen is the HTTP listen address of service when it runs alone.
func serviceListen(service string) Setting {
	return Setting{Flag: service + "-http", Env: "PRSAGA_" + strings.ToUpper(service) + "_HTTP_ADDR"}
}

// HTTPListenSettings are every setting that names an HTTP listen address:
// PRSAGA_HTTP_ADDR and each PRSAGA_<SERVICE>_HTTP_ADDR. Validate holds
// each one that is set to one rule (Listener.check).
func HTTPListenSettings() []Setting {
	out := []Setting{httpListen}
	for _, s := range services {
		out = append(out, serviceListen(s))
	}
	return out
}

// HTTPListeners are the HTTP listen addresses the configuration sets, in
// the order of HTTPListenSettings: PRSAGA_HTTP_ADDR always, a service's
// own address when it is set.
func (c Config) HTTPListeners() []Listener {
	out := []Listener{{Setting: httpListen, Addr: c.HTTPAddr}}
	for _, s := range services {
		if a := c.ServiceHTTPAddr[s]; a != "" {
			out = append(out, Listener{Setting: serviceListen(s), Addr: a})
		}
	}
	return out
}

// HTTPListen is where a process running services listens: the one
// service's PRSAGA_<SERVICE>_HTTP_ADDR when it runs exactly one and that is
// set, else PRSAGA_HTTP_ADDR. Both are among HTTPListeners, so Validate
// has checked the address returned.
func (c Config) HTTPListen(running []string) Listener {
	if len(running) == 1 {
		if a := c.ServiceHTTPAddr[running[0]]; a != "" {
			return Listener{Setting: serviceListen(running[0]), Addr: a}
		}
	}
	return Listener{Setting: httpListen, Addr: c.HTTPAddr}
}

// check is the rule of every HTTP listener: host:port, and a listener off
// loopback needs the operator token — without one every route, merge
// requests and retries included, is open to whoever reaches it.
func (l Listener) check(apiToken string) error {
	if _, _, err := net.SplitHostPort(l.Addr); err != nil {
		return fmt.Errorf("%s: %q is not host:port", l.Env, l.Addr)
	}
	if apiToken == "" && !IsLoopback(l.Addr) {
		return fmt.Errorf("%s: %s is not a loopback address, so PRSAGA_API_TOKEN is required", l.Env, l.Addr)
	}
	return nil
}

// IsLoopback reports whether host:port listens on loopback only (an empty
// host listens everywhere).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
