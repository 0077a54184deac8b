package ydb

import (
	"embed"

	pydb "github.com/prsaga/prsaga/platform/ydb"
)

//go:embed migrations/*.yql
var migrationFiles embed.FS

// Migrations is the ledger's schema, applied by pydb.Open.
var Migrations = pydb.EmbeddedMigrations("ledger", migrationFiles, "migrations")
