// Command prsaga runs and operates the PR-merge saga: `dev` (everything in
// one process), `demo`, `serve <service>`, and client verbs against the API.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the command ran and the answer is "no" (API error, scenario failed)
	exitUsage   = 2
	exitTimeout = 3 // waited and the saga did not finish in time
)

const usage = `prsaga — a pull-request merge run as a saga

usage: prsaga <command> [arguments] [flags]

  dev                 run embedded NATS + all five services + dashboard in one process
  demo                run the scenarios in a temp dir and print each PR's timeline
  serve <service>     run one service (validator|merger|notifier|indexer|ledger)
  nats                run only the embedded NATS server on PRSAGA_NATS_LISTEN, for separate serve processes
  merge               request a merge (--repo --pr --source --target --head [--strategy --title --by --wait])
  status <pr>         show one saga
  list                list sagas [--state S] [--repo R] [--stuck] [--limit N]
  history <pr>        show a saga's transitions (time, time in state, who)
  retry <pr>          retry a failed saga: replay its failed step's trigger [--dry-run] [--force] [--wait D]
  retry --all         retry every failed saga a filter selects [--step --repo --since --reason --limit --rate --dry-run]
  trace <corr-id|pr>  one timeline of a run from every service's log lines and the ledger, with step
                      durations and gaps [--logs DIR] [--json] [--follow] [--gap D]
  dlq list|show|redrive  dead letters on NATS: list [--consumer C], show <seq>, redrive <seq>...|--all
  reindex             rebuild the search index from the stream's notified events (stop the indexer first)
                      [--index DIR | --out DIR] [--remove-old] [--allow-partial] [--json]
  watchdog --once     one tick of the ledger's watchdog against the configured store and bus, JSON summary
                      (for cron or a scheduled function; safe beside running ledgers)
  ledger verify       re-derive every saga from the ledger's event log and report each difference with
                      pr_saga/saga_transition (exit 1); --repair rewrites them, audited, with the ledger stopped
  schema --store ydb  print the YQL of every service's tables [--database /local]
  merge-check         replay a repository's own merge commits through the merge engine and compare
                      with git merge-tree; writes nothing (--git-dir DIR [--sample N] [--seed S])
  backup --to DIR     online backup of every service's SQLite database, the search index and the
                      consumers' stream positions, under load [--json]
  restore --from DIR  put a backup back into a stopped deployment; each consumer resumes from the
                      backup's position [--force] [--json]
  bench               run a benchmark workload (--workload W1|W2 --prs N --concurrency C --repos R --mode inproc|procs)

Every command takes --help (or: prsaga help <command>). Configuration: PRSAGA_* environment variables, each also a flag.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "--help"} // prsaga help merge = prsaga merge --help
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmds := map[string]func(context.Context, []string, func(string) string, io.Writer, io.Writer) int{
		"dev":         cmdDev,
		"demo":        cmdDemo,
		"serve":       cmdServe,
		"merge":       cmdMerge,
		"status":      cmdStatus,
		"list":        cmdList,
		"history":     cmdHistory,
		"retry":       cmdRetry,
		"trace":       cmdTrace,
		"bench":       cmdBench,
		"nats":        cmdNATS,
		"dlq":         cmdDLQ,
		"reindex":     cmdReindex,
		"watchdog":    cmdWatchdog,
		"ledger":      cmdLedger,
		"schema":      cmdSchema,
		"merge-check": cmdMergeCheck,
		"backup":      cmdBackup,
		"restore":     cmdRestore,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "prsaga: unknown command %q\nrun `prsaga help` for the commands\n", args[0])
		return exitUsage
	}
	return cmd(ctx, args[1:], getenv, stdout, stderr)
}
