//go:build race

package main

// verifySagas is the size of TestLedgerVerifyAndRepair's ledger under the
// race detector, which makes every projection about eight times slower:
// a few hundred sagas keep the test within its budget in `make test`; the
// 2,000-saga run is the test without -race (make test runs both).
const verifySagas = 250
