package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/ydb"
)

// Tables is a service's tables on one store: the database and the
// service's adapter over it.
type Tables[S any] struct {
	DB    store.DB
	Store S
}

// TablesOpener opens a fresh database with the service's schema and
// returns its tables; now is the store's clock.
type TablesOpener[S any] func(t *testing.T, now func() time.Time) Tables[S]

// Suite is a service's part of the conformance suite: the migrations of
// its tables on each store, the adapter its server picks for a database,
// and its tests.
type Suite[S any] struct {
	SQLite  sqlite.Migrations
	YDB     ydb.Migrations
	Adapter func(store.DB) (S, error)
	Run     func(t *testing.T, open TablesOpener[S])
}

// Stores runs the suite once per store adapter (Stores) on the service's
// adapter over each database, so that the suite is written once against
// the service's port.
func (s Suite[S]) Stores(t *testing.T) {
	schema := Schema{SQLite: []sqlite.Migrations{s.SQLite}, YDB: []ydb.Migrations{s.YDB}}
	Stores(t, schema, func(t *testing.T, open Opener) {
		s.Run(t, func(t *testing.T, now func() time.Time) Tables[S] {
			t.Helper()
			db := open(t, now)
			st, err := s.Adapter(db)
			if err != nil {
				t.Fatal(err)
			}
			return Tables[S]{DB: db, Store: st}
		})
	})
}

// otherTx is a transaction of some other store.
type otherTx struct{ store.Tx }

// BindOtherTx checks that a service's Bind refuses a transaction its
// adapter did not open (store.ErrWrongTx, no tables) instead of misusing it.
func BindOtherTx[Tx comparable](t *testing.T, bind func(store.Tx) (Tx, error)) {
	t.Helper()
	var none Tx
	if tx, err := bind(otherTx{}); !errors.Is(err, store.ErrWrongTx) || tx != none {
		t.Errorf("Bind(another store's tx) = %v, %v; want store.ErrWrongTx", tx, err)
	}
}
