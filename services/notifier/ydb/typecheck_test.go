package ydb

import (
	"testing"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/platform/ydb/ydbcheck"
	"github.com/prsaga/prsaga/services/notifier"
)

// Every statement of the notifier's YDB store, with its parameters as the
// store builds them and the function that scans its rows, typed against
// the migrations (see platform/ydb/ydbcheck). A statement declared in the
// package and missing here fails the test.
func TestStatementsTypeCheck(t *testing.T) {
	ydbcheck.LoadPackage(pydb.SchemaStatements(Migrations)).Run(t, []ydbcheck.Case{
		{Name: "qDeleteWatchers", YQL: qDeleteWatchers, Params: repoParams("acme/a")},
		{Name: "qPutWatchers", YQL: qPutWatchers, Params: putWatchersParams("acme/a", []notifier.Watcher{{ID: "w", URL: "http://x", Secret: "s"}}, ydbcheck.Now)},
		{Name: "qWatchers", YQL: qWatchers, Params: repoParams("acme/a"), Scan: ydbcheck.Scan(scanWatcher)},
		{Name: "qDeliveries", YQL: qDeliveries, Params: deliveriesParams("c"), Scan: ydbcheck.Scan(scanDelivery)},
		{Name: "qDelivered", YQL: qDelivered, Params: deliveredParams("c", []string{"w"}), Scan: ydbcheck.Scan(scanWatcherID)},
		{Name: "qPutDeliveries", YQL: qPutDeliveries, Params: putDeliveriesParams([]notifier.Delivery{{CorrelationID: "c", WatcherID: "w"}}, ydbcheck.Now)},
		{Name: "qDeliveryPage", YQL: qDeliveryPage, Params: deliveryPageParams(3, "c", 500), Scan: func(r query.Row) error { _, _, _, err := scanDeliveryPage(r); return err }},
		{Name: "qDeliveryRun", YQL: qDeliveryRun, Params: deliveriesParams("c"), Scan: ydbcheck.Scan2(scanDeliveryRun)},
		{Name: "qDeleteRun", YQL: qDeleteRun, Params: deliveriesParams("c")},
	})
}
