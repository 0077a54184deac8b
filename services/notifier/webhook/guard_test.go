package webhook

import (
	"errors"
	"net/netip"
	"testing"
)

func TestNonPublicReason(t *testing.T) {
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808"}
	blocked := []string{
		"127.0.0.1", "127.9.9.9", "::1", // loopback
		"10.1.2.3", "172.16.0.1", "192.168.1.1", "fd00::1", // private
		"169.254.169.254", "fe80::1", "fe80::1%eth0", // link-local (cloud metadata)
		"0.0.0.0", "::", "0.1.2.3", // unspecified, this network
		"224.0.0.1", "ff02::1", // multicast
		"100.64.0.1", "198.18.0.1", "255.255.255.255", "192.0.0.8",
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", // IPv4-mapped
		"64:ff9b::a00:1", "64:ff9b::7f00:1", // NAT64 of 10.0.0.1, 127.0.0.1
	}
	for _, s := range public {
		if why := nonPublicReason(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s: refused as %q, want allowed", s, why)
		}
	}
	for _, s := range blocked {
		if why := nonPublicReason(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
}

func TestGuardDial(t *testing.T) {
	if err := guardDial("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("guardDial(8.8.8.8:443) = %v, want nil", err)
	}
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "[::ffff:192.168.0.1]:80", "nonsense"} {
		err := guardDial("tcp", addr, nil)
		if !errors.Is(err, ErrPrivateAddress) || !errors.Is(err, ErrPermanent) {
			t.Errorf("guardDial(%s) = %v, want ErrPrivateAddress and ErrPermanent", addr, err)
		}
	}
}
