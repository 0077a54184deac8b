package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// tableBytes reads, from every database under dir, the bytes each table
// takes with its indexes, and the free pages (SQLite's dbstat).
func tableBytes(ctx context.Context, dir string) ([]SoakDBTable, error) {
	var out []SoakDBTable
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(dir, "repos") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".sqlite") {
			return nil
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			return err
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, `SELECT coalesce(s.tbl_name, d.name), sum(d.pgsize)
			FROM dbstat d LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY 1 ORDER BY 2 DESC`)
		if err != nil {
			return fmt.Errorf("dbstat of %s: %w", path, err)
		}
		defer rows.Close()
		name := strings.TrimSuffix(filepath.Base(path), ".sqlite")
		for rows.Next() {
			t := SoakDBTable{DB: name}
			if err := rows.Scan(&t.Table, &t.Bytes); err != nil {
				return err
			}
			out = append(out, t)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		free := SoakDBTable{DB: name, Table: "(free pages)"}
		if err := db.QueryRowContext(ctx, `SELECT f.freelist_count * p.page_size FROM pragma_freelist_count f, pragma_page_size p`).Scan(&free.Bytes); err != nil {
			return fmt.Errorf("free pages of %s: %w", path, err)
		}
		out = append(out, free)
		return nil
	})
	return out, err
}
