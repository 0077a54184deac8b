package ydb

import (
	"testing"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/platform/ydb/ydbcheck"
	"github.com/prsaga/prsaga/services/validator"
)

// Every statement of the validator's YDB tables, with its parameters as
// the adapter builds them and the function that scans its rows, typed
// against the migrations (see platform/ydb/ydbcheck). A statement declared
// in the package and missing here fails the test.
func TestStatementsTypeCheck(t *testing.T) {
	ydbcheck.LoadPackage(pydb.SchemaStatements(Migrations)).Run(t, []ydbcheck.Case{
		{Name: "qStatuses", YQL: qStatuses, Params: statusesParams("acme/a", "abc"), Scan: ydbcheck.Scan(scanStatus)},
		{Name: "qPutStatus", YQL: qPutStatus, Params: statusParams("acme/a", "abc", validator.Status{Context: "ci", State: "success", UpdatedAt: ydbcheck.Now})},
		{Name: "qProtection", YQL: qProtection, Params: protectionKey("acme/a", "main"), Scan: func(r query.Row) error { _, _, err := scanProtection(r, nil, "acme/a", "main"); return err }},
		{Name: "qPutProtection", YQL: qPutProtection, Params: putProtectionParams("acme/a", "main", "[]", ydbcheck.Now)},
		{Name: "qLock", YQL: qLock, Params: lockParams("acme/a#1"), Scan: func(r query.Row) error { _, err := scanLock(r, nil, "acme/a#1"); return err }},
		{Name: "qPutLock", YQL: qPutLock, Params: putLockParams("acme/a#1", validator.Lock{Holder: "c", Attempt: 1}, ydbcheck.Now)},
	})
}
