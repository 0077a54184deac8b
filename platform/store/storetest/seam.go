package storetest

import (
	"context"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// sqliteSeam lets the suite drive *sqlite.DB as a store.DB while its
// Update still takes func(*sqlite.Tx). Temporary: it goes when the sqlite
// adapter implements store.DB itself.
type sqliteSeam struct{ *sqlite.DB }

func seam(db *sqlite.DB) store.DB { return sqliteSeam{db} }

// SQLite is the database behind the seam, for the services' suites.
func (s sqliteSeam) SQLite() *sqlite.DB { return s.DB }

func (s sqliteSeam) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.DB.Update(ctx, func(tx *sqlite.Tx) error { return fn(tx) })
}

func (s sqliteSeam) Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error) {
	rows, err := s.DB.Unsent(ctx, limit)
	out := make([]store.OutboxRow, len(rows))
	for i, r := range rows {
		out[i] = store.OutboxRow(r)
	}
	return out, err
}
