package stack

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/prsaga/prsaga/platform/httpx"

	indexer "github.com/prsaga/prsaga/services/indexer/server"
	ledger "github.com/prsaga/prsaga/services/ledger/server"
	merger "github.com/prsaga/prsaga/services/merger/server"
	notifier "github.com/prsaga/prsaga/services/notifier/server"
	validator "github.com/prsaga/prsaga/services/validator/server"
)

// build opens a service's database and assembles it.
func (s *Stack) build(ctx context.Context, name string) (component, error) {
	cfg := s.cfg
	operator := httpx.Tokens{cfg.APIToken}
	switch name {
	case "validator":
		db, err := s.openDB(ctx, name, validator.Migrations)
		if err != nil {
			return nil, err
		}
		return validator.New(validator.Options{
			DB: db, ReposDir: cfg.ReposDir,
			OperatorTokens: operator, StatusTokens: httpx.Tokens{cfg.StatusToken, cfg.APIToken},
		})
	case "merger":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		return merger.New(merger.Options{DB: db, ReposDir: cfg.ReposDir, Sync: cfg.Durability == "sync"})
	case "notifier":
		db, err := s.openDB(ctx, name, notifier.Migrations)
		if err != nil {
			return nil, err
		}
		return notifier.New(notifier.Options{DB: db, AllowPrivate: cfg.WebhookAllowPrivate, OperatorTokens: operator})
	case "indexer":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		ix, err := indexer.New(indexer.Options{DB: db, IndexDir: filepath.Join(cfg.DataDir, "index")})
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, ix.Close)
		return ix, nil
	case "ledger":
		db, err := s.openDB(ctx, name, ledger.Migrations)
		if err != nil {
			return nil, err
		}
		return ledger.New(ledger.Options{DB: db, OperatorTokens: operator})
	}
	return nil, fmt.Errorf("unknown service %q", name)
}
