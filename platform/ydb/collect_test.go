package ydb

import (
	"errors"
	"slices"
	"testing"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

// collect is what Collect and CollectTx run on the rows a query gives; the
// rows here are stand-ins (nil), numbered by the scan.
func TestCollectScansEveryRowAndStopsAtAnError(t *testing.T) {
	rows := func(n int) func(func(query.Row) error) error {
		return func(each func(query.Row) error) error {
			for range n {
				if err := each(nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	counter := func(failAt int) func(query.Row) (int, error) {
		i := 0
		return func(query.Row) (int, error) {
			i++
			if i == failAt {
				return 0, errors.New("bad row")
			}
			return i, nil
		}
	}
	if got, err := collect(rows(0), counter(0)); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no rows: %#v, %v; want an empty slice, not nil", got, err)
	}
	if got, err := collect(rows(3), counter(0)); err != nil || !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("three rows: %v, %v", got, err)
	}
	if got, err := collect(rows(3), counter(2)); err == nil || !slices.Equal(got, []int{1}) {
		t.Fatalf("a bad second row: %v, %v; want the error and the first row only", got, err)
	}
	fail := errors.New("query failed")
	if _, err := collect(func(func(query.Row) error) error { return fail }, counter(0)); !errors.Is(err, fail) {
		t.Fatalf("a failed query: %v", err)
	}
}
