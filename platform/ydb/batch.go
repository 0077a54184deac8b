package ydb

import (
	"context"
	"errors"

	"github.com/ydb-platform/ydb-go-sdk/v3"

	"github.com/prsaga/prsaga/platform/store"
)

// errUnitFailed ends an attempt of UpdateEach whose unit failed on its own.
var errUnitFailed = errors.New("ydb: a unit of the batch failed")

// UpdateEach commits several units in one serializable transaction: one
// commit, and one inbox and outbox write (flush) for the whole batch,
// instead of one of each per message (runner.BatchStore). YDB has no
// savepoints, so a unit that fails on its own (its function's error, not
// the transaction's) is left out and the batch runs again without it, in a
// new transaction: errs[i] is unit i's own failure, err a failure of the
// whole batch (nothing committed). Each function may therefore run more
// than once, as under Update. Units run in order; a later unit reads what
// an earlier one wrote (the transaction's own writes), which YDB's query
// service allows (docs/ydb.md lists the server version assumed).
func (db *DB) UpdateEach(ctx context.Context, fns []func(tx store.Tx) error) ([]error, error) {
	return runEach(func(fn func(tx store.Tx) error) error { return db.Update(ctx, fn) }, fns)
}

// runEach is UpdateEach over any update function.
func runEach(update func(fn func(tx store.Tx) error) error, fns []func(tx store.Tx) error) ([]error, error) {
	errs := make([]error, len(fns))
	for left := len(fns); left > 0; left-- {
		failed, unitErr := -1, error(nil)
		err := update(func(tx store.Tx) error {
			failed, unitErr = -1, nil
			for i, fn := range fns {
				if errs[i] != nil {
					continue
				}
				if err := fn(tx); err != nil {
					if ofTransaction(err) {
						return err // DoTx retries it when it can
					}
					failed, unitErr = i, err
					return errUnitFailed
				}
			}
			return nil
		})
		switch {
		case err == nil:
			return errs, nil
		case errors.Is(err, errUnitFailed) && failed >= 0:
			errs[failed] = unitErr
		default:
			return nil, err
		}
	}
	return errs, nil // every unit failed on its own
}

// ofTransaction tells the transaction's failures (the server's, the
// network's, the context's) from a unit's own.
func ofTransaction(err error) bool {
	return ydb.IsYdbError(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
