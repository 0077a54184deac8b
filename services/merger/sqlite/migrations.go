package sqlite

import (
	"embed"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the merger's tables, applied by psqlite.Open.
var Migrations = psqlite.EmbeddedMigrations("merger", migrationFiles, "migrations")
