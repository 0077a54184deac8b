package main

import (
	"fmt"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/datalock"
	"github.com/prsaga/prsaga/contracts"
)

// The parts of a data directory a process opens, each owned by one
// process at a time (datalock): "nats", the embedded server's JetStream
// store <data>/nats (dev, nats), which two servers would corrupt; and per
// service its share of the directory — its database in the default store
// <data>/db, its outbox relayed to the bus it was started with, its index
// (dev, serve). `dev` owns them all, and its dev.json with them. Several
// `serve` processes share one data directory when they run different
// services, and a `nats` beside them. Replicas of a service each have a
// data directory of their own (they may share a store: design §9). The
// indexer's part is shared among `serve indexer` processes: its standbys
// wait on one index, and the index's writer lock decides which one writes.
const natsPart = "nats"

// serviceParts are the parts of the services a process runs; with
// standbys the indexer's is shared.
func serviceParts(services []string, standbys bool) []datalock.Part {
	parts := make([]datalock.Part, 0, len(services)+1)
	for _, s := range services {
		parts = append(parts, datalock.Part{Name: s, Shared: standbys && s == contracts.ServiceIndexer})
	}
	return parts
}

// takeDataDir takes the parts of dir the process opens, for holder, or
// says who has them.
func takeDataDir(dir string, parts []datalock.Part, holder datalock.Holder) (*datalock.Lock, error) {
	l, err := datalock.Take(dir, parts, holder)
	if err != nil {
		return nil, fmt.Errorf("data directory %s is in use:\n%w\nstop that process, or give this one a data directory of its own (--data / PRSAGA_DATA_DIR)", dir, err)
	}
	return l, nil
}
