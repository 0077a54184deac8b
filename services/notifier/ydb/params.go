package ydb

import (
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/notifier"
)

// The parameters of each statement and the scan of its rows, one function
// each, so that typecheck_test.go runs the very functions the store runs
// against the types the migrations give (see platform/ydb/ydbcheck).

func repoParams(repo string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$repo").Text(repo).Build()
}

func putWatchersParams(repo string, ws []notifier.Watcher, now time.Time) ydbsdk.Params {
	items := make([]types.Value, len(ws))
	for i, w := range ws {
		items[i] = types.StructValue(
			types.StructFieldValue("repo", types.TextValue(repo)),
			types.StructFieldValue("id", types.TextValue(w.ID)),
			types.StructFieldValue("url", types.TextValue(w.URL)),
			types.StructFieldValue("secret", types.TextValue(w.Secret)),
			types.StructFieldValue("created_at", types.TimestampValueFromTime(now)),
		)
	}
	return ydbsdk.ParamsBuilder().Param("$watchers").Any(types.ListValue(items...)).Build()
}

func scanWatcher(row query.Row) (w notifier.Watcher, err error) {
	err = row.Scan(&w.ID, &w.Repo, &w.URL, &w.Secret)
	return w, err
}

// Correlation ids are UUIDv7: the delivery table's key begins with the
// id's shard so that new runs do not all land in its last partition.
func deliveriesParams(correlationID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(pydb.Shard(correlationID)).
		Param("$correlation_id").Text(correlationID).Build()
}

func scanDelivery(row query.Row) (notifier.Delivery, error) {
	var d notifier.Delivery
	var attempts int64
	if err := row.Scan(&d.WatcherID, &d.Delivered, &attempts, &d.LastError); err != nil {
		return notifier.Delivery{}, err
	}
	d.Attempts = int(attempts)
	return d, nil
}

func deliveredParams(correlationID string, watcherIDs []string) ydbsdk.Params {
	ids := make([]types.Value, len(watcherIDs))
	for i, id := range watcherIDs {
		ids[i] = types.TextValue(id)
	}
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(pydb.Shard(correlationID)).
		Param("$correlation_id").Text(correlationID).
		Param("$watcher_ids").Any(types.ListValue(ids...)).Build()
}

func scanWatcherID(row query.Row) (id string, err error) {
	err = row.Scan(&id)
	return id, err
}

func putDeliveriesParams(ds []notifier.Delivery, now time.Time) ydbsdk.Params {
	items := make([]types.Value, len(ds))
	for i, d := range ds {
		items[i] = types.StructValue(
			types.StructFieldValue("corr_shard", types.Uint32Value(pydb.Shard(d.CorrelationID))),
			types.StructFieldValue("correlation_id", types.TextValue(d.CorrelationID)),
			types.StructFieldValue("watcher_id", types.TextValue(d.WatcherID)),
			types.StructFieldValue("delivered", types.BoolValue(d.Delivered)),
			types.StructFieldValue("attempts", types.Int64Value(int64(d.Attempts))),
			types.StructFieldValue("last_error", types.TextValue(d.LastError)),
			types.StructFieldValue("updated_at", types.TimestampValueFromTime(now)),
		)
	}
	return ydbsdk.ParamsBuilder().Param("$deliveries").Any(types.ListValue(items...)).Build()
}
