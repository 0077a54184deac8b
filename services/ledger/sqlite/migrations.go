package sqlite

import (
	"embed"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the ledger's schema; open the service's database with it.
var Migrations = psqlite.EmbeddedMigrations("ledger", migrationFiles, "migrations")
