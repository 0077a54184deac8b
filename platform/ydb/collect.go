package ydb

import (
	"context"

	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

// Collect runs q outside any write transaction (DB.Query) and scans every
// row of its answer; an empty answer is an empty slice, not nil. The
// services' adapters list their rows with it instead of each writing the
// loop.
func Collect[T any](ctx context.Context, db *DB, q string, params ydb.Params, scan func(query.Row) (T, error)) ([]T, error) {
	return collect(func(each func(query.Row) error) error { return db.Query(ctx, q, params, each) }, scan)
}

// CollectTx is Collect inside tx (Tx.Query).
func CollectTx[T any](tx *Tx, q string, params ydb.Params, scan func(query.Row) (T, error)) ([]T, error) {
	return collect(func(each func(query.Row) error) error { return tx.Query(q, params, each) }, scan)
}

func collect[T any](run func(each func(query.Row) error) error, scan func(query.Row) (T, error)) ([]T, error) {
	out := []T{}
	err := run(func(row query.Row) error {
		v, err := scan(row)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
