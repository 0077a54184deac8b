package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/prsaga/prsaga/contracts"
)

// carriedOver are the tables a restore keeps from the databases it
// replaces: they record facts about what a restore does not put back.
// The merger's journal holds every merge and squash commit it built into
// the git repositories (which stay as they are): rolled back, a squash made
// after the backup would no longer be recognised as done, and the PR would
// be squashed into its target a second time.
var carriedOver = map[string][]string{
	contracts.ServiceMerger: {"merge_journal"},
}

// carryOverAll adds to the restored database at path the rows of
// service's carriedOver tables from the database of that service in every
// kept directory beside it (keptDirs): the one this run replaced and the
// ones earlier restores replaced. A restore that was interrupted and run
// again has moved the database that held the rows into the first run's
// directory and the backup's copy into a later one; and a journal row is
// a fact about git, true whichever restore kept it. Rows the restored
// database has are kept (INSERT OR IGNORE: the key is the same fact), so
// the union is taken once. It warns when no kept directory holds such a
// database: the rows written since the backup are then lost.
func carryOverAll(ctx context.Context, service, path string, warn io.Writer) (rows int64, err error) {
	if len(carriedOver[service]) == 0 {
		return 0, nil
	}
	dirs, err := keptDirs(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	found := false
	for _, dir := range dirs {
		old := filepath.Join(dir, filepath.Base(path))
		if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
			continue
		}
		found = true
		n, err := carryOver(ctx, service, path, old)
		if err != nil {
			return rows, fmt.Errorf("from %s: %w", old, err)
		}
		rows += n
	}
	if !found {
		fmt.Fprintf(warn, "warning: no %s database was replaced: its %v since the backup are lost (a PR squashed since may be squashed again)\n", service, carriedOver[service])
	}
	return rows, nil
}

// carryOver copies the rows of service's carriedOver tables from the
// replaced database old into the restored one at path, keeping the
// restored rows (INSERT OR IGNORE: the key is the same fact). Only the
// columns both have are copied, so a backup of an older schema takes the
// rows too. Nothing to do when old does not exist.
func carryOver(ctx context.Context, service, path, old string) (rows int64, err error) {
	tables := carriedOver[service]
	if len(tables) == 0 {
		return 0, nil
	}
	if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	db, err := openFile(path, false)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS old`, "file:"+filepath.ToSlash(old)); err != nil {
		return 0, fmt.Errorf("attach the replaced database: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE old`)
	for _, table := range tables {
		cols, err := commonColumns(ctx, conn, table)
		if err != nil {
			return rows, err
		}
		if len(cols) == 0 {
			continue // the replaced database has no such table
		}
		list := strings.Join(cols, ", ")
		res, err := conn.ExecContext(ctx, `INSERT OR IGNORE INTO main.`+table+` (`+list+`) SELECT `+list+` FROM old.`+table)
		if err != nil {
			return rows, fmt.Errorf("carry %s over: %w", table, err)
		}
		n, _ := res.RowsAffected()
		rows += n
	}
	return rows, nil
}

// commonColumns are the columns table has in both main and old, quoted;
// none when old has no such table.
func commonColumns(ctx context.Context, conn *sql.Conn, table string) ([]string, error) {
	names := func(schema string) (map[string]bool, []string, error) {
		rows, err := conn.QueryContext(ctx, `SELECT name FROM pragma_table_info(?, ?)`, table, schema)
		if err != nil {
			return nil, nil, fmt.Errorf("columns of %s.%s: %w", schema, table, err)
		}
		defer rows.Close()
		set, order := map[string]bool{}, []string(nil)
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return nil, nil, err
			}
			set[n] = true
			order = append(order, n)
		}
		return set, order, rows.Err()
	}
	_, mine, err := names("main")
	if err != nil {
		return nil, err
	}
	theirs, _, err := names("old")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range mine {
		if theirs[c] {
			out = append(out, `"`+strings.ReplaceAll(c, `"`, `""`)+`"`)
		}
	}
	return out, nil
}
