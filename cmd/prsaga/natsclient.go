package main

import (
	"context"
	"fmt"
	"io"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
)

// clientBus is the bus configuration of a verb's own connection to the
// deployment's NATS at url, with cfg's credentials and TLS: every verb that
// reads or resets the stream dials it the same way, under the name
// "prsaga-<verb>" the server's monitoring shows.
func clientBus(cfg config.Config, url, verb string) bus.Config {
	return bus.Config{URL: url, Name: "prsaga-" + verb, CredsFile: cfg.NATSCreds,
		TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey}
}

// dialBus connects verb to NATS at url (clientBus); on failure it reports
// the error on stderr, with hint (see refusedHint) when one is given.
func dialBus(ctx context.Context, cfg config.Config, url, verb, hint string, stderr io.Writer) (*bus.Bus, bool) {
	b, err := bus.Connect(ctx, clientBus(cfg, url, verb))
	if err != nil {
		fmt.Fprintf(stderr, "prsaga %s: %v\n", verb, err)
		if hint != "" {
			refusedHint(stderr, err, hint)
		}
		return nil, false
	}
	return b, true
}
