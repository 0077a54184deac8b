package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// EachFixture runs test as a subtest per upgrade fixture in testdata/schema
// of the package under test (Fixtures), named for the fixture's file, with
// a context that ends after 30 seconds.
func EachFixture(t *testing.T, test func(t *testing.T, ctx context.Context, fixture string)) {
	t.Helper()
	for _, fixture := range Fixtures(t, filepath.Join("testdata", "schema")) {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			test(t, ctx, fixture)
		})
	}
}
