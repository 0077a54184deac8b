package ydb

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

// Migrations is one component's YQL schema: files named NNNN_what.yql,
// applied in name order, each once, recorded under Component. Statements are
// separated by a semicolon at the end of a line. Each statement must be
// idempotent (CREATE TABLE IF NOT EXISTS …, ALTER TABLE … SET): DDL cannot
// share a transaction with the record of it, and replicas starting
// together may both run it. ALTER TABLE … ADD INDEX and DROP INDEX have no
// IF [NOT] EXISTS: they are made idempotent by describing the table first
// (indexChangeDone). The files are forward-only: a change is a new file.
type Migrations struct {
	Component string
	FS        fs.FS
}

// Statements returns the migration files' statements in order, each with
// the file it came from.
func (m Migrations) Statements() ([]Statement, error) {
	names, err := fs.Glob(m.FS, "*.yql")
	if err != nil {
		return nil, fmt.Errorf("migrations of %s: %w", m.Component, err)
	}
	var out []Statement
	for _, name := range names { // fs.Glob returns names sorted
		body, err := fs.ReadFile(m.FS, name)
		if err != nil {
			return nil, fmt.Errorf("migration %s/%s: %w", m.Component, name, err)
		}
		for _, stmt := range SplitStatements(string(body)) {
			out = append(out, Statement{Component: m.Component, File: name, YQL: stmt})
		}
	}
	return out, nil
}

// Statement is one DDL statement of a migration file.
type Statement struct {
	Component, File, YQL string
}

// SplitStatements splits YQL at semicolons that end a line (not a comment
// line), dropping comment-only and empty pieces.
func SplitStatements(yql string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		if s == "" {
			return
		}
		for _, line := range strings.Split(s, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
				out = append(out, s)
				return
			}
		}
	}
	for _, line := range strings.SplitAfter(yql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasSuffix(trimmed, ";") && !strings.HasPrefix(trimmed, "--") {
			cur.WriteString(strings.TrimRight(strings.TrimRight(line, " \t\r\n"), ";"))
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return out
}

// SchemaMigrationsTable records the migrations applied in a directory.
const SchemaMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    component  Utf8      NOT NULL,
    name       Utf8      NOT NULL,
    applied_at Timestamp NOT NULL,
    PRIMARY KEY (component, name)
)`

// migrate applies each file not recorded yet: its statements one by one
// (DDL, each in an implicit transaction of its own), then the record.
func (db *DB) migrate(ctx context.Context, all []Migrations) error {
	if err := db.ddl(ctx, SchemaMigrationsTable); err != nil {
		return fmt.Errorf("ydb: migrate %s: %w", db.dir, err)
	}
	for _, m := range all {
		names, err := fs.Glob(m.FS, "*.yql")
		if err != nil {
			return fmt.Errorf("ydb: migrate %s: %w", m.Component, err)
		}
		for _, name := range names {
			if err := db.apply(ctx, m, name); err != nil {
				return fmt.Errorf("ydb: migrate %s/%s in %s: %w", m.Component, name, db.dir, err)
			}
		}
	}
	return nil
}

func migrationParams(component, name string) ydb.Params {
	return ydb.ParamsBuilder().Param("$component").Text(component).Param("$name").Text(name).Build()
}

func recordMigrationParams(component, name string, at time.Time) ydb.Params {
	return ydb.ParamsBuilder().Param("$component").Text(component).Param("$name").Text(name).
		Param("$at").Timestamp(at).Build()
}

func scanMigrationApplied(row query.Row) error {
	var at time.Time
	return row.Scan(&at)
}

func (db *DB) apply(ctx context.Context, m Migrations, name string) error {
	applied, err := db.applied(ctx, m.Component, name)
	if err != nil || applied {
		return err
	}
	body, err := fs.ReadFile(m.FS, name)
	if err != nil {
		return err
	}
	for _, stmt := range SplitStatements(string(body)) {
		done, err := db.indexChangeDone(ctx, stmt)
		if err != nil {
			return err
		}
		if done {
			continue
		}
		if err := db.ddl(ctx, stmt); err != nil {
			return err
		}
	}
	return db.conn.drv.Query().Exec(ctx, db.yql(qRecordMigration),
		query.WithParameters(recordMigrationParams(m.Component, name, db.now())),
		query.WithIdempotent())
}

// applied reads the record of one migration. Straight after CREATE TABLE
// schema_migrations a read may still meet a transient scheme error (the
// table's metadata not yet everywhere, or created by another replica at
// the same moment): such errors are tried again, like the DDL.
func (db *DB) applied(ctx context.Context, component, name string) (bool, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var row query.Row
		row, err = db.QueryRow(ctx, qMigrationApplied, migrationParams(component, name))
		switch {
		case err == nil:
			return true, scanMigrationApplied(row)
		case IsNoRows(err):
			return false, nil
		case ctx.Err() != nil:
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return false, err
}

// ddl runs one schema statement outside any transaction. Two replicas
// creating the same table at once may see a transient scheme error; the
// statement is idempotent, so it is simply tried again.
func (db *DB) ddl(ctx context.Context, stmt string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = db.conn.drv.Query().Exec(ctx, db.yql(stmt), query.WithIdempotent()); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return fmt.Errorf("schema statement %.80q: %w", strings.Join(strings.Fields(stmt), " "), err)
}

// SchemaStatements are the statements that create a directory's tables:
// schema_migrations, the platform's migrations, then migs.
func SchemaStatements(migs ...Migrations) ([]string, error) {
	out := []string{SchemaMigrationsTable}
	for _, m := range append([]Migrations{PlatformMigrations}, migs...) {
		stmts, err := m.Statements()
		if err != nil {
			return nil, err
		}
		for _, s := range stmts {
			out = append(out, s.YQL)
		}
	}
	return out, nil
}

// Schema renders the YQL that Open applies for one service directory, for
// `prsaga schema --store ydb`: the table-path prefix line, then every
// statement of the platform's and the given migrations.
func Schema(database, prefix string, migs ...Migrations) (string, error) {
	var b strings.Builder
	dir := strings.TrimRight(database, "/") + "/" + prefix
	if !dirRE.MatchString(dir) || containsDotDot(dir[1:]) {
		return "", fmt.Errorf("ydb: table directory %q is not an absolute path of plain names", dir)
	}
	fmt.Fprintf(&b, "PRAGMA TablePathPrefix(%q);\n\n%s;\n", dir, SchemaMigrationsTable)
	for _, m := range append([]Migrations{PlatformMigrations}, migs...) {
		stmts, err := m.Statements()
		if err != nil {
			return "", err
		}
		for _, s := range stmts {
			fmt.Fprintf(&b, "\n-- %s/%s\n%s;\n", s.Component, s.File, s.YQL)
		}
	}
	return b.String(), nil
}
