package sqlite

import (
	"embed"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations of the notifier's tables.
var Migrations = psqlite.EmbeddedMigrations("notifier", migrationFiles, "migrations")
