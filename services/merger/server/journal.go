package server

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
	msqlite "github.com/prsaga/prsaga/services/merger/sqlite"
	mydb "github.com/prsaga/prsaga/services/merger/ydb"
)

// Migrations are the merger's tables on SQLite; open its database with them.
var Migrations = msqlite.Migrations

// Journal is the merger's journal table on one store. Record commits in a
// transaction of its own: it must be durable before the ref moves, long
// before the outbox transaction of the merged event.
type Journal interface {
	Recorded(ctx context.Context, prID string) ([]string, error)
	Record(ctx context.Context, e gitrepo.JournalEntry) error
}

var (
	_ Journal = (*msqlite.Journal)(nil)
	_ Journal = (*mydb.Journal)(nil)
)

// JournalOf returns the merger's journal on db's store (SQLite or YDB).
func JournalOf(db store.DB) (Journal, error) {
	j, err := journals.For(db)
	if err != nil {
		return nil, fmt.Errorf("merger: %w", err)
	}
	return j, nil
}

var journals = service.Tables[Journal]{
	SQLite: func(db *psqlite.DB) Journal { return &msqlite.Journal{DB: db} },
	YDB:    func(db *pydb.DB) Journal { return &mydb.Journal{DB: db} },
}

// boundJournal is a Journal for one merge: gitrepo's calls carry no
// context, the handler's does.
type boundJournal struct {
	ctx context.Context
	j   Journal
}

func (b boundJournal) Recorded(prID string) ([]string, error) { return b.j.Recorded(b.ctx, prID) }
func (b boundJournal) Record(e gitrepo.JournalEntry) error    { return b.j.Record(b.ctx, e) }
