package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// ErrBadURL is matched (errors.Is) by every error of ValidateURL.
var ErrBadURL = errors.New("invalid webhook url")

// ValidateURL checks the shape of a watcher's URL: at most MaxURLLength
// bytes, an http or https scheme, a host, a valid port if any, and no
// user:password part (credentials belong in the signing secret). Whether the
// host is public is decided when a Sender dials, because a name can resolve
// differently later. The error never quotes the URL.
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port must be 1-65535", ErrBadURL)
		}
	}
	return nil
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
