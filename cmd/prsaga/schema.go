package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/platform/ydb"
)

// cmdSchema prints the YQL of every service's tables (`prsaga schema
// --store ydb`), the text of deploy/ydb/schema.yql.
func cmdSchema(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prsaga schema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("store", "ydb", "the store whose schema to print (ydb)")
	database := fs.String("database", defaultDatabase(getenv("PRSAGA_STORE")), "the YDB database the tables live in (default: the database of PRSAGA_STORE, else /local)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseError(err, stderr)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "prsaga schema: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *kind != "ydb" {
		fmt.Fprintf(stderr, "prsaga schema: --store %q: only ydb has a schema to print (SQLite files migrate themselves)\n", *kind)
		return exitUsage
	}
	out, err := stack.YDBSchema(*database)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga schema: %v\n", err)
		return exitUsage
	}
	fmt.Fprint(stdout, out)
	return exitOK
}

// defaultDatabase is the database path of a YDB DSN, or /local.
func defaultDatabase(store string) string {
	if !ydb.IsDSN(store) {
		return "/local"
	}
	u, err := url.Parse(store)
	if err != nil {
		return "/local"
	}
	if db := u.Query().Get("database"); db != "" {
		return db
	}
	if p := strings.TrimRight(u.Path, "/"); p != "" {
		return p
	}
	return "/local"
}
