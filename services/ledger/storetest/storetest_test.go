package storetest_test

import (
	"testing"

	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// TestStores runs the ledger's suite on every store (YDB when configured).
func TestStores(t *testing.T) { storetest.Suite.Stores(t) }
