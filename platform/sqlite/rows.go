package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// Rows are the results of a query, read as *sql.Rows are: Next, Scan, Err,
// Close. A write transaction's queries run on the driver's connection
// directly (writer.go) and their rows are the driver's; a read on the
// reader pool gives database/sql's, wrapped.
type Rows struct {
	sr *sql.Rows // a read on the reader pool; nil for a transaction's

	tx     *Tx
	st     *wstmt // the statement the rows hold until closed
	dr     driver.Rows
	cols   []string
	vals   []driver.Value
	err    error
	closed bool
}

var errRowsClosed = errors.New("sql: Rows are closed")

// readRows wraps a reader pool's query results.
func readRows(rows *sql.Rows, err error) (*Rows, error) {
	if err != nil {
		return nil, err
	}
	return &Rows{sr: rows}, nil
}

// Next prepares the next row for Scan; false at the end or on an error
// (see Err), the rows then closed.
func (r *Rows) Next() bool {
	if r.sr != nil {
		return r.sr.Next()
	}
	if r.closed {
		return false
	}
	if r.vals == nil {
		r.vals = make([]driver.Value, len(r.cols))
	}
	if err := r.dr.Next(r.vals); err != nil {
		if err != io.EOF {
			r.err = err
		}
		r.Close()
		return false
	}
	return true
}

// Scan copies the current row's columns into dest, converting as
// database/sql does.
func (r *Rows) Scan(dest ...any) error {
	if r.sr != nil {
		return r.sr.Scan(dest...)
	}
	if r.closed {
		return errRowsClosed
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, v := range r.vals {
		if err := assign(dest[i], v); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d, name %q: %w", i, r.cols[i], err)
		}
	}
	return nil
}

// Err is the error that ended Next early, if any.
func (r *Rows) Err() error {
	if r.sr != nil {
		return r.sr.Err()
	}
	return r.err
}

// Columns are the names of the result's columns.
func (r *Rows) Columns() ([]string, error) {
	if r.sr != nil {
		return r.sr.Columns()
	}
	if r.closed {
		return nil, errRowsClosed
	}
	return r.cols, nil
}

// Close releases the rows (and their statement for the next query); safe
// to call more than once.
func (r *Rows) Close() error {
	if r.sr != nil {
		return r.sr.Close()
	}
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.dr.Close()
	r.tx.release(r.st)
	return err
}

// Row is the result of a query for at most one row, scanned as *sql.Row is.
type Row struct {
	sr   *sql.Row // a read on the reader pool
	rows *Rows
	err  error
}

// Scan reads the row into dest and releases it; sql.ErrNoRows when the
// query returned none.
func (r *Row) Scan(dest ...any) error {
	if r.sr != nil {
		return r.sr.Scan(dest...)
	}
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	for _, d := range dest {
		if _, ok := d.(*sql.RawBytes); ok {
			return errors.New("sql: RawBytes isn't allowed on Row.Scan")
		}
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// Err is the query's error, without scanning.
func (r *Row) Err() error {
	if r.sr != nil {
		return r.sr.Err()
	}
	return r.err
}
