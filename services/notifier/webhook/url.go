package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// ErrBadURL is matched (errors.Is) by every error of ValidateURL.
var ErrBadURL = errors.New("invalid webhook url")

// ValidateURL checks the shape of a watcher's URL: at most MaxURLLength
// bytes, an http or https scheme, a host that is a DNS name or an IP
// address, a valid port if any, and no user:password part (credentials
// belong in the signing secret). Whether the host is public is decided when
// a Sender dials, because a name can resolve differently later. The error
// never quotes the URL.
func ValidateURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: empty", ErrBadURL)
	}
	if len(raw) > MaxURLLength {
		return fmt.Errorf("%w: %d bytes long (at most %d)", ErrBadURL, len(raw), MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole input in its errors: never wrap them.
		return fmt.Errorf("%w: cannot be parsed", ErrBadURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme must be http or https", ErrBadURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: must not contain a user or password", ErrBadURL)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return fmt.Errorf("%w: has no host", ErrBadURL)
	}
	if why := badHost(u.Host, u.Hostname()); why != "" {
		return fmt.Errorf("%w: the host %s", ErrBadURL, why)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port must be 1-65535", ErrBadURL)
		}
	}
	return nil
}

// badHost says why a URL's host cannot be dialled, or "" when it can.
// url.Parse lets through hosts no resolver answers (bytes that are not
// UTF-8, "]", empty labels); refusing them here means a watcher's host is
// shown exactly as it was put. A bracketed host must be an IPv6 address
// without a zone (a zone names an interface of one machine); otherwise the
// host is an IPv4 address or a name of dot-separated labels of letters
// (internationalised names included), digits, '-' and '_', as DNS allows.
func badHost(host, name string) string {
	if strings.HasPrefix(host, "[") {
		a, err := netip.ParseAddr(name)
		switch {
		case err != nil || !a.Is6():
			return "is not an IPv6 address"
		case a.Zone() != "":
			return "has an IPv6 zone, which names an interface of one machine"
		}
		return ""
	}
	if !utf8.ValidString(name) {
		return "is not valid UTF-8"
	}
	name = strings.TrimSuffix(name, ".")
	if len(name) > 253 {
		return "name is longer than 253 bytes"
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return "has an empty label or one longer than 63 bytes"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "has a label that begins or ends with '-'"
		}
		for _, r := range label {
			if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
				return "has a character a host name cannot hold"
			}
		}
	}
	return ""
}

// Redact returns the part of a webhook URL that may be shown or logged:
// scheme://host[:port], without user info, path, query or fragment. A URL
// that does not parse gives "(invalid url)".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(invalid url)"
	}
	return u.Scheme + "://" + u.Host
}
