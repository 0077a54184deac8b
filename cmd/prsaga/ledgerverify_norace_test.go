//go:build !race

package main

// verifySagas is the size of TestLedgerVerifyAndRepair's ledger (see
// ledgerverify_race_test.go for the race detector's).
const verifySagas = 2000
