package ydb

import (
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/contracts"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
)

// The parameters of each statement and the scan of its rows, one function
// each, so that typecheck_test.go runs the very functions the store runs
// against the types the migrations give (see platform/ydb/ydbcheck).

func prKey(prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Build()
}

func eventIDParams(eventID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$shard").Uint32(pydb.Shard(eventID)).Param("$event_id").Text(eventID).Build()
}

// A statement over a run takes its correlation id and that id's shard.
func corrParams(correlationID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(pydb.Shard(correlationID)).
		Param("$correlation_id").Text(correlationID).Build()
}

func latestEventParams(correlationID, eventType string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(pydb.Shard(correlationID)).
		Param("$correlation_id").Text(correlationID).Param("$type").Text(eventType).Build()
}

func runParams(correlationID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$corr_shard").Uint32(pydb.Shard(correlationID)).
		Param("$correlation_id").Text(correlationID).Param("$limit").Uint64(MaxEvents).Build()
}

func prEventsParams(prID string) ydbsdk.Params {
	return prEventsParamsUpTo(prID, MaxEvents)
}

func prEventsParamsUpTo(prID string, limit uint64) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Param("$limit").Uint64(limit).Build()
}

func outboxStatusParams(eventID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$shard").Uint32(pydb.Shard(eventID)).Param("$id").Text(eventID).Build()
}

func putSagaParams(key string, next contracts.Row, version int64) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$pr_id").Text(key).
		Param("$repo").Text(next.Repo).
		Param("$correlation_id").Text(next.CorrelationID).
		Param("$state").Text(string(next.State)).
		Param("$failed_step").Text(string(next.FailedStep)).
		Param("$last_error").Text(next.LastError).
		Param("$timed_out").Bool(next.TimedOut).
		Param("$attempts").Int64(int64(next.Attempts)).
		Param("$merge_sha").Text(next.MergeSHA).
		Param("$merged").Bool(next.Merged).
		Param("$version").Int64(version).
		Param("$created_at").Timestamp(next.CreatedAt).
		Param("$updated_at").Timestamp(next.UpdatedAt).
		Build()
}

// transitionsParams carries ts, numbered already, as the list qAddTransitions
// inserts.
func transitionsParams(prID string, ts []ledger.Transition) ydbsdk.Params {
	items := make([]types.Value, len(ts))
	for i, tr := range ts {
		items[i] = types.StructValue(
			types.StructFieldValue("pr_id", types.TextValue(prID)),
			types.StructFieldValue("seq", types.Int64Value(tr.Seq)),
			types.StructFieldValue("correlation_id", types.TextValue(tr.CorrelationID)),
			types.StructFieldValue("corr_shard", types.Uint32Value(pydb.Shard(tr.CorrelationID))),
			types.StructFieldValue("from_state", types.TextValue(string(tr.From))),
			types.StructFieldValue("to_state", types.TextValue(string(tr.To))),
			types.StructFieldValue("reason", types.TextValue(tr.Reason)),
			types.StructFieldValue("event_id", types.TextValue(tr.EventID)),
			types.StructFieldValue("inferred", types.BoolValue(tr.Inferred)),
			types.StructFieldValue("actor", types.TextValue(tr.Actor)),
			types.StructFieldValue("at", types.TimestampValueFromTime(tr.At)),
		)
	}
	return ydbsdk.ParamsBuilder().Param("$transitions").Any(types.ListValue(items...)).Build()
}

func recordEventParams(e ledger.Event) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$shard").Uint32(pydb.Shard(e.EventID)).
		Param("$event_id").Text(e.EventID).
		Param("$pr_id").Text(e.PRID).
		Param("$correlation_id").Text(e.CorrelationID).
		Param("$corr_shard").Uint32(pydb.Shard(e.CorrelationID)).
		Param("$type").Text(e.Type).
		Param("$status").Text(e.Status).
		Param("$reason").Text(e.Reason).
		Param("$received_at").Timestamp(e.ReceivedAt).
		Param("$event").Text(string(e.Event)).
		Build()
}

func retryAnswerParams(key string, since time.Time) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$key").Text(key).Param("$since").Timestamp(since).Build()
}

func saveRetryAnswerParams(key, prID, answer string, at time.Time) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$key").Text(key).
		Param("$pr_id").Text(prID).
		Param("$answer").Text(answer).
		Param("$created_at").Timestamp(at).
		Build()
}

func stuckParams(state contracts.State, cut time.Time, limit int) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$state").Text(string(state)).
		Param("$cutoff").Timestamp(cut).
		Param("$limit").Uint64(uint64(limit)).
		Build()
}

// recentParams bounds the window of transitions. A Timestamp starts at the
// Unix epoch: an earlier Since means "no time bound".
func recentParams(w ledger.StepWindow) ydbsdk.Params {
	since := w.Since
	if epoch := time.Unix(0, 0); since.Before(epoch) {
		since = epoch
	}
	return ydbsdk.ParamsBuilder().Param("$since").Timestamp(since).Param("$limit").Uint64(uint64(w.Limit)).Build()
}

// listStatement picks the list's statement for a filter without Stuck and
// its parameters; $limit is the page size plus one. A filter without a
// state or a repository is listed by state (listAllParams).
func listStatement(f ledger.Filter) (string, ydbsdk.Params) {
	b := ydbsdk.ParamsBuilder().Param("$limit").Uint64(uint64(f.Limit + 1))
	var q string
	if f.State != "" {
		q = pick(f.After == nil, qListState, qListStateAfter)
		b = b.Param("$state").Text(string(f.State)).Param("$any_repo").Bool(f.Repo == "").Param("$repo").Text(f.Repo)
	} else {
		q = pick(f.After == nil, qListRepo, qListRepoAfter)
		b = b.Param("$repo").Text(f.Repo)
	}
	if f.After != nil {
		b = b.Param("$after_updated_at").Timestamp(f.After.UpdatedAt).Param("$after_pr_id").Text(f.After.PRID)
	}
	return q, b.Build()
}

// listStuckParams are qListStuck's for one in-flight state.
func listStuckParams(f ledger.Filter, st contracts.State, cut time.Time) ydbsdk.Params {
	b := ydbsdk.ParamsBuilder().
		Param("$state").Text(string(st)).
		Param("$cutoff").Timestamp(cut).
		Param("$any_repo").Bool(f.Repo == "").
		Param("$repo").Text(f.Repo).
		Param("$from_start").Bool(f.After == nil).
		Param("$limit").Uint64(uint64(f.Limit + 1))
	// Without a cursor $from_start makes the cursor's bound moot; it is
	// still bound, and to a Timestamp in range (the epoch), not to the zero
	// time.Time, which lies before 1970 and out of Timestamp's range.
	after := ledger.Cursor{UpdatedAt: time.Unix(0, 0).UTC()}
	if f.After != nil {
		after = *f.After
	}
	return b.Param("$after_updated_at").Timestamp(after.UpdatedAt).Param("$after_pr_id").Text(after.PRID).Build()
}

func scanText(row query.Row) (s string, err error) {
	err = row.Scan(&s)
	return s, err
}

func scanVersion(row query.Row) (v int64, err error) {
	err = row.Scan(&v)
	return v, err
}

// scanLastSeq: MAX of no rows is NULL.
func scanLastSeq(row query.Row) (last *int64, err error) {
	err = row.Scan(&last)
	return last, err
}

func scanSentAt(row query.Row) (sentAt *time.Time, err error) {
	err = row.Scan(&sentAt)
	return sentAt, err
}

func scanStepRow(row query.Row) (ledger.StepRow, error) {
	var r ledger.StepRow
	var to string
	if err := row.Scan(&r.PRID, &r.Seq, &to, &r.Inferred, &r.At); err != nil {
		return ledger.StepRow{}, err
	}
	r.To, r.At = contracts.State(to), r.At.UTC()
	return r, nil
}

func inFlightParams() ydbsdk.Params {
	states := make([]types.Value, len(contracts.Steps))
	for i, st := range contracts.Steps {
		states[i] = types.TextValue(string(st))
	}
	return ydbsdk.ParamsBuilder().Param("$states").Any(types.ListValue(states...)).Build()
}

// scanInFlightCount reads a row of qInFlightCounts: MIN(updated_at) with
// GROUP BY is a Timestamp (never NULL), scanned into a time.Time.
func scanInFlightCount(row query.Row) (string, ledger.StateCount, error) {
	var state string
	var n uint64
	var oldest time.Time
	if err := row.Scan(&state, &n, &oldest); err != nil {
		return "", ledger.StateCount{}, err
	}
	return state, ledger.StateCount{Sagas: int(n), Oldest: oldest.UTC()}, nil
}

func scanFinalCount(row query.Row) (state string, sagas int64, err error) {
	err = row.Scan(&state, &sagas)
	return state, sagas, err
}

func stateParams(state contracts.State) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$state").Text(string(state)).Build()
}

func scanOldest(row query.Row) (at time.Time, err error) {
	err = row.Scan(&at)
	return at.UTC(), err
}

// counterShards spreads each final state's count over this many rows.
const counterShards = 8

func stateCountParams(state contracts.State, prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$state").Text(string(state)).
		Param("$shard").Uint32(pydb.Shard(prID) % counterShards).Build()
}

func putStateCountParams(state contracts.State, prID string, sagas int64) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$state").Text(string(state)).
		Param("$shard").Uint32(pydb.Shard(prID) % counterShards).Param("$sagas").Int64(sagas).Build()
}

func scanSagas(row query.Row) (n int64, err error) {
	err = row.Scan(&n)
	return n, err
}
