package ydb

import (
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// The parameters of each statement and the scan of its rows, one function
// each, so that typecheck_test.go runs the very functions the store runs
// against the types the migrations give (see platform/ydb/ydbcheck).

func prKey(prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Build()
}

func eventIDParams(eventID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$event_id").Text(eventID).Build()
}

func corrParams(correlationID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$correlation_id").Text(correlationID).Build()
}

func latestEventParams(correlationID, eventType string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$correlation_id").Text(correlationID).Param("$type").Text(eventType).Build()
}

func runParams(correlationID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$correlation_id").Text(correlationID).Param("$limit").Uint64(MaxEvents).Build()
}

func prEventsParams(prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Param("$limit").Uint64(MaxEvents).Build()
}

func outboxStatusParams(eventID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$id").Text(eventID).Build()
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
		Param("$event_id").Text(e.EventID).
		Param("$pr_id").Text(e.PRID).
		Param("$correlation_id").Text(e.CorrelationID).
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

// listStatement picks the list's statement for a filter without Stuck
// (one per index and first or next page) and its parameters; $limit is
// the page size plus one.
func listStatement(f ledger.Filter) (string, ydbsdk.Params) {
	b := ydbsdk.ParamsBuilder().Param("$limit").Uint64(uint64(f.Limit + 1))
	var q string
	switch {
	case f.State != "":
		q = pick(f.After == nil, qListState, qListStateAfter)
		b = b.Param("$state").Text(string(f.State)).Param("$any_repo").Bool(f.Repo == "").Param("$repo").Text(f.Repo)
	case f.Repo != "":
		q = pick(f.After == nil, qListRepo, qListRepoAfter)
		b = b.Param("$repo").Text(f.Repo)
	default:
		q = pick(f.After == nil, qListAll, qListAllAfter)
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
	var after ledger.Cursor
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

func scanStateCount(row query.Row) (string, ledger.StateCount, error) {
	var state string
	var n uint64
	var oldest *time.Time
	if err := row.Scan(&state, &n, &oldest); err != nil {
		return "", ledger.StateCount{}, err
	}
	c := ledger.StateCount{Sagas: int(n)}
	if oldest != nil {
		c.Oldest = oldest.UTC()
	}
	return state, c, nil
}
