package storetest_test

import (
	"testing"

	"github.com/prsaga/prsaga/services/notifier/storetest"
)

// TestStores runs the notifier's suite on every store (YDB when configured).
func TestStores(t *testing.T) { storetest.Suite.Stores(t) }
