package storetest_test

import (
	"testing"

	"github.com/prsaga/prsaga/platform/store/storetest"
)

// TestStores runs the platform's part of the suite on every adapter.
func TestStores(t *testing.T) {
	storetest.Stores(t, storetest.Schema{}, storetest.Run)
}
