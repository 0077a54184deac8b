package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrPrivateAddress is matched (errors.Is) when a Sender refused to connect
// because the receiver's address is not public. Such errors also match
// ErrPermanent.
var ErrPrivateAddress = errors.New("webhook address is not public")

// Ranges that IsPrivate, IsLoopback and friends do not cover but that are
// not the public internet either.
var nonPublic = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "in 'this network'"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT) space"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment space"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking space"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
}

// nat64 embeds an IPv4 address in its last 32 bits; that address decides.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// nonPublicReason says why addr is not a public unicast address, or returns
// "" if it is one.
func nonPublicReason(addr netip.Addr) string {
	addr = addr.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	if addr.Is6() && nat64.Contains(addr) {
		b := addr.As16()
		return nonPublicReason(netip.AddrFrom4([4]byte(b[12:])))
	}
	switch {
	case !addr.IsValid():
		return "not an address"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(addr) {
			return r.what
		}
	}
	return ""
}

// refusedError is a dial the guard refused.
type refusedError struct {
	addr   netip.Addr
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("refusing to connect to %s: address is %s (set %s=true to allow private receivers)", e.addr, e.reason, AllowPrivateEnv)
}

func (e *refusedError) Is(target error) bool {
	return target == ErrPrivateAddress || target == ErrPermanent
}

// guardDial is a net.Dialer Control function: it runs after name resolution,
// for every address the dialer is about to connect to, so the check covers
// what is actually dialled (a name that resolves to a public address when
// the watcher is saved and to 127.0.0.1 later is still refused).
func guardDial(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{reason: "not an ip:port (" + network + ")"}
	}
	if why := nonPublicReason(ap.Addr()); why != "" {
		return &refusedError{addr: ap.Addr(), reason: why}
	}
	return nil
}
