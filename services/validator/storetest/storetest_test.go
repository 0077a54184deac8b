package storetest_test

import (
	"testing"

	"github.com/prsaga/prsaga/services/validator/storetest"
)

// TestStores runs the validator's suite on every store (YDB when configured).
func TestStores(t *testing.T) { storetest.Suite.Stores(t) }
