package storetest_test

import (
	"testing"

	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/notifier/storetest"
)

// TestStores runs the notifier's suite on every store adapter (YDB only
// when configured).
func TestStores(t *testing.T) { pstoretest.Stores(t, storetest.Schema, storetest.Run) }
