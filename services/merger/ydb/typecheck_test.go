package ydb

import (
	"testing"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/platform/ydb/ydbcheck"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// Every statement of the merger's journal, with its parameters as the
// journal builds them and the function that scans its rows, typed against
// the migrations (see platform/ydb/ydbcheck). A statement declared in the
// package and missing here fails the test.
func TestStatementsTypeCheck(t *testing.T) {
	entry := gitrepo.JournalEntry{PRID: "acme/a#1", Commit: "c", Repo: "acme/a", TargetBranch: "main", Strategy: "squash", Base: "b", CorrelationID: "r"}
	ydbcheck.LoadPackage(pydb.SchemaStatements(Migrations)).Run(t, []ydbcheck.Case{
		{Name: "qRecorded", YQL: qRecorded, Params: recordedParams("acme/a#1"), Scan: ydbcheck.Scan(scanSHA)},
		{Name: "qRecord", YQL: qRecord, Params: recordParams(entry, ydbcheck.Now)},
	})
}
