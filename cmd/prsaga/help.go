package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/prsaga/prsaga/platform/config"
)

// verbSummary is the line `prsaga <verb> --help` starts with.
var verbSummary = map[string]string{
	"merge":    "request a merge: prsaga merge --repo R --pr N --source B --head SHA [--target main] [--wait 30s]",
	"status":   "show one saga: prsaga status <pr>, e.g. prsaga status 'acme/widgets#42'",
	"list":     "list sagas: prsaga list [--state S] [--repo R] [--stuck] [--limit N]",
	"history":  "show a saga's transitions: prsaga history <pr>",
	"retry":    "retry a failed saga by replaying its failed step's trigger: prsaga retry <pr> [--dry-run] [--force] [--wait D] | prsaga retry --all [--step S] [--repo R] [--since 2h] [--reason RE] [--limit N] [--rate N] [--dry-run]",
	"trace":    "one timeline of a run from every service's log lines and the ledger: prsaga trace <correlation-id | pr>",
	"dlq":      "dead letters on NATS: prsaga dlq list [--consumer C] | show <seq> | redrive <seq>... | redrive --all",
	"backup":   "online backup of a deployment on the SQLite store, under load: prsaga backup --to DIR (docs/operating.md, Backup and restore)",
	"restore":  "put a backup back into a stopped deployment: prsaga restore --from DIR [--force] (docs/operating.md, Backup and restore)",
	"watchdog": "one tick of the ledger's watchdog, for cron or a scheduled function: prsaga watchdog --once",
}

// clientVerbs talk to the API (and dlq to NATS): their help lists the
// flags that matter to a client, not the servers' settings.
var clientVerbs = map[string]bool{"merge": true, "status": true, "list": true, "history": true, "retry": true, "trace": true}

// clientSetting reports whether a configuration flag matters to a client
// verb: where the API is (or where `prsaga dev` recorded it) and tokens.
func clientSetting(name string) bool {
	switch name {
	case "api", "api-token", "data", "http":
		return true
	}
	return strings.Contains(name, "token") && name != "status-token"
}

// natsSetting reports whether a configuration flag matters to `dlq`.
func natsSetting(name string) bool {
	return name == "data" || strings.HasPrefix(name, "nats-")
}

// configFlagNames are the flags config.Bind defines.
func configFlagNames() map[string]bool {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	config.Bind(fs, func(string) string { return "" })
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// printHelp prints a verb's help: what it does and its flags; a client
// verb lists its own flags and the client settings only.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	verb := strings.TrimPrefix(fs.Name(), "prsaga ")
	base, _, _ := strings.Cut(verb, " ")
	if s, ok := verbSummary[base]; ok {
		fmt.Fprintln(w, s)
	} else {
		fmt.Fprintf(w, "usage: %s [flags]\n", fs.Name())
	}
	keep := func(string) bool { return true }
	switch {
	case clientVerbs[base]:
		keep = clientSetting
	case base == "dlq":
		keep = natsSetting
	}
	cfgNames := configFlagNames()
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !cfgNames[f.Name] || keep(f.Name) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	fmt.Fprintln(w, "\nflags:")
	shown.SetOutput(w)
	shown.PrintDefaults()
	if clientVerbs[base] || base == "dlq" {
		fmt.Fprintln(w, "\nWithout --api / PRSAGA_API_URL (dlq: --nats-url / PRSAGA_NATS_URL) the verb talks to the `prsaga dev`\nwhose data directory is --data (it records where it listens in <data>/dev.json), else to 127.0.0.1:8080.")
	}
	fmt.Fprintln(w, "\n`prsaga help` lists the commands; every flag is also a PRSAGA_* environment variable.")
}

// mergeFlagOf names the `merge` flag of each request field.
var mergeFlagOf = map[string]string{
	"repo": "--repo", "pr_number": "--pr", "source_branch": "--source", "target_branch": "--target",
	"head_sha": "--head", "strategy": "--strategy", "title": "--title", "requested_by": "--by",
}

// flagProblems restates a request's validation errors (one per line,
// each starting with its JSON field) with the flags a CLI user typed. The
// pr_id is made from --repo and --pr: its problems repeat theirs, so they
// are left out when those flags have their own.
func flagProblems(err error) []string {
	var out, prID []string
	seen := map[string]bool{}
	for _, line := range strings.Split(err.Error(), "\n") {
		field, rest, _ := strings.Cut(line, " ")
		if field == "pr_id" {
			prID = append(prID, line)
			continue
		}
		if f, ok := mergeFlagOf[field]; ok {
			line = f + " " + rest
		}
		if line != "" && !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return prID
	}
	return out
}
