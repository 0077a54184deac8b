package ydbcheck

import (
	"time"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

// Now is the time the adapters' tables build their sample parameters at:
// inside the range of YQL's Timestamp, a whole second.
var Now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Scan is a Case's Scan for an adapter's scan function of one value: the
// check needs its error only.
func Scan[T any](scan func(query.Row) (T, error)) func(query.Row) error {
	return func(r query.Row) error {
		_, err := scan(r)
		return err
	}
}

// Scan2 is Scan for a scan function of two values.
func Scan2[T, U any](scan func(query.Row) (T, U, error)) func(query.Row) error {
	return func(r query.Row) error {
		_, _, err := scan(r)
		return err
	}
}
