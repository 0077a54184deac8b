package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// AllowPrivateEnv is the setting that lets watchers point at loopback and
// private addresses; errors name it because that is what an operator sets.
const AllowPrivateEnv = "PRSAGA_WEBHOOK_ALLOW_PRIVATE"

// LookupIP resolves a host name to its addresses.
type LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)

func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// CheckPublic refuses a watcher URL whose host is not public when it is
// put, so an operator learns it at once rather than from a failed delivery:
// an IP literal is checked as is, "localhost" names are loopback, and any
// other name is resolved (briefly, with lookup; nil: the system resolver) and refused when it resolves to a
// non-public address. A name that does not resolve now is accepted: the
// dial-time guard still checks every address actually dialled. The error
// never quotes the URL.
func CheckPublic(ctx context.Context, raw string, lookup LookupIP) error {
	if lookup == nil {
		lookup = systemLookup
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: cannot be parsed", ErrBadURL)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	refuse := func(why string) error {
		return fmt.Errorf("%w: the host is %s; set %s=true to allow private receivers (tests, local demos)", ErrPrivateAddress, why, AllowPrivateEnv)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return refuse("loopback")
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if why := nonPublicReason(addr); why != "" {
			return refuse(why)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if why := nonPublicReason(a); why != "" {
			return refuse(why + " (" + a.String() + ")")
		}
	}
	return nil
}
