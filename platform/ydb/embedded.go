package ydb

import (
	"fmt"
	"io/fs"
)

// EmbeddedMigrations is component's Migrations in the directory dir of
// files, a file system embedded at build time (//go:embed dir/*.yql): what
// every adapter declares as its Migrations. A dir that is not a valid path
// is a programming error, seen at start: it panics.
func EmbeddedMigrations(component string, files fs.FS, dir string) Migrations {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(fmt.Sprintf("ydb: migrations of %s: %v", component, err))
	}
	return Migrations{Component: component, FS: sub}
}
