package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/durable"
)

// devInfoFile is where `prsaga dev` records where it listens, in its data
// directory, so that the client verbs (and dlq) started with the same
// --data find it whatever ports it was given.
const devInfoFile = "dev.json"

type devInfo struct {
	APIURL  string `json:"api_url"`
	NATSURL string `json:"nats_url"`
	PID     int    `json:"pid"`
}

// writeDevInfo records info in dir, atomically (a reader never sees half
// a file).
func writeDevInfo(dir string, info devInfo) error {
	return durable.WriteJSON(filepath.Join(dir, devInfoFile), info, 0o644)
}

// removeDevInfo removes the dev.json of dir if it is still the one this
// process wrote (info): never another process's.
func removeDevInfo(dir string, info devInfo) {
	if cur, ok := readDevInfo(dir); ok && cur == info {
		_ = os.Remove(filepath.Join(dir, devInfoFile))
	}
}

// readDevInfo reads what a `prsaga dev` recorded in dir; false when there
// is nothing usable.
func readDevInfo(dir string) (devInfo, bool) {
	b, err := os.ReadFile(filepath.Join(dir, devInfoFile))
	if err != nil {
		return devInfo{}, false
	}
	var info devInfo
	if json.Unmarshal(b, &info) != nil || info.APIURL == "" {
		return devInfo{}, false
	}
	return info, true
}

// explicit reports whether any of the flags or environment variables was
// given: then it decides, not what `prsaga dev` recorded.
func explicit(fs *flag.FlagSet, getenv func(string) string, flags, envs []string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range flags {
			set = set || f.Name == n
		}
	})
	for _, e := range envs {
		set = set || getenv(e) != ""
	}
	return set
}

// apiURLOf is where a client verb talks: --api / PRSAGA_API_URL (or the
// --http address) when given, else what `prsaga dev` recorded in the
// data directory, else the default.
func apiURLOf(fs *flag.FlagSet, getenv func(string) string, cfg config.Config) string {
	if !explicit(fs, getenv, []string{"api", "http"}, []string{"PRSAGA_API_URL", "PRSAGA_HTTP_ADDR"}) {
		if info, ok := readDevInfo(cfg.DataDir); ok {
			return strings.TrimRight(info.APIURL, "/")
		}
	}
	return strings.TrimRight(cfg.APIURL, "/")
}

// natsURLOf is where dlq talks: PRSAGA_NATS_URL, else the embedded server
// of `prsaga dev` (recorded, or on --nats-listen).
func natsURLOf(fs *flag.FlagSet, getenv func(string) string, cfg config.Config) string {
	if cfg.NATSURL != "" {
		return cfg.NATSURL
	}
	if !explicit(fs, getenv, []string{"nats-listen"}, []string{"PRSAGA_NATS_LISTEN"}) {
		if info, ok := readDevInfo(cfg.DataDir); ok && info.NATSURL != "" {
			return info.NATSURL
		}
	}
	return "nats://" + cfg.NATSListen
}

// refusedHint says what to do when nothing listens where a client verb
// dialled.
func refusedHint(w io.Writer, err error, what string) {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, nats.ErrNoServers) {
		fmt.Fprintf(w, "  is `prsaga dev` running? set %s\n", what)
	}
}

// checkListen says at once that an address `prsaga dev` needs is taken,
// naming the setting that moves it (the services would otherwise fail one
// by one, or later).
func checkListen(addr, setting string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is already in use (another `prsaga dev`?): stop it, or listen elsewhere with %s", addr, setting)
		}
		return fmt.Errorf("cannot listen on %s (%s): %w", addr, setting, err)
	}
	return ln.Close()
}
