package ydb

import (
	"testing"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/contracts"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/platform/ydb/ydbcheck"
	"github.com/prsaga/prsaga/services/ledger"
)

// Every statement of the ledger's YDB store, with its parameters as the
// store builds them and the function that scans its rows, typed against
// the migrations (see platform/ydb/ydbcheck). A statement declared in the
// package and missing here fails the test.
func TestStatementsTypeCheck(t *testing.T) {
	now := ydbcheck.Now
	row := contracts.Row{PRID: "acme/a#1", Repo: "acme/a", CorrelationID: "c", State: contracts.StateMerging, CreatedAt: now, UpdatedAt: now}
	tr := ledger.Transition{Seq: 1, CorrelationID: "c", From: contracts.StateValidating, To: contracts.StateMerging, At: now}
	ev := ledger.Event{EventID: "e", PRID: "acme/a#1", CorrelationID: "c", Type: "t", ReceivedAt: now, Event: []byte("{}")}
	after := &ledger.Cursor{UpdatedAt: now, PRID: "acme/a#1"}
	list := func(f ledger.Filter, want string) ydbsdk.Params {
		q, p := listStatement(f)
		if q != want {
			t.Errorf("filter %+v runs %.60q, want the statement of %.60q", f, q, want)
		}
		return p
	}
	saga := ydbcheck.Scan(scanSaga)
	event := ydbcheck.Scan(scanEvent)
	text := ydbcheck.Scan(scanText)
	stuck := ledger.Filter{Stuck: true, Limit: 10, Repo: "acme/a"}
	ydbcheck.LoadPackage(pydb.SchemaStatements(Migrations)).Run(t, []ydbcheck.Case{
		{Name: "qPing", YQL: qPing, Params: prKey(""), Scan: text},
		{Name: "qSaga", YQL: qSaga, Params: prKey("p"), Scan: saga},
		{Name: "qSagaVersion", YQL: qSagaVersion, Params: prKey("p"), Scan: ydbcheck.Scan(scanVersion)},
		{Name: "qPutSaga", YQL: qPutSaga, Params: putSagaParams("p", row, 2)},
		{Name: "qEventRecorded", YQL: qEventRecorded, Params: eventIDParams("e"), Scan: text},
		{Name: "qRecordEvent", YQL: qRecordEvent, Params: recordEventParams(ev)},
		{Name: "qLastSeq", YQL: qLastSeq, Params: prKey("p"), Scan: ydbcheck.Scan(scanLastSeq)},
		{Name: "qAddTransitions", YQL: qAddTransitions, Params: transitionsParams("p", []ledger.Transition{tr})},
		{Name: "qTransitions", YQL: qTransitions, Params: prKey("p"), Scan: func(r query.Row) error { _, _, err := scanTransition(r, false); return err }},
		{Name: "qLastTransition", YQL: qLastTransition, Params: prKey("p"), Scan: func(r query.Row) error { _, _, err := scanTransition(r, false); return err }},
		{Name: "qLatestEvent", YQL: qLatestEvent, Params: latestEventParams("c", "t"), Scan: event},
		{Name: "qAnyEventOfRun", YQL: qAnyEventOfRun, Params: corrParams("c"), Scan: text},
		{Name: "qEventsOfRun", YQL: qEventsOfRun, Params: runParams("c"), Scan: event},
		{Name: "qEventsOfPR", YQL: qEventsOfPR, Params: prEventsParams("p"), Scan: event},
		{Name: "qEventsOfPR (EventsOf, in a transaction)", YQL: qEventsOfPR, Params: prEventsParamsUpTo("p", ledger.MaxRunEvents), Scan: event},
		{Name: "qTransitionsOfRun", YQL: qTransitionsOfRun, Params: runParams("c"), Scan: func(r query.Row) error { _, _, err := scanTransition(r, true); return err }},
		{Name: "qRetryAnswer", YQL: qRetryAnswer, Params: retryAnswerParams("k", now), Scan: text},
		{Name: "qSaveRetryAnswer", YQL: qSaveRetryAnswer, Params: saveRetryAnswerParams("k", "p", "{}", now)},
		{Name: "qMergedSagas", YQL: qMergedSagas, Params: mergedSagasParams(now, time.Time{}, 10), Scan: func(r query.Row) error { _, err := scanMerged(r); return err }},
		{Name: "qEventKeysOfPR", YQL: qEventKeysOfPR, Params: prKey("p"), Scan: func(r query.Row) error { _, err := scanEventKey(r); return err }},
		{Name: "qEmptyBodies", YQL: qEmptyBodies, Params: emptyBodiesParams(emptyBody(1, "e"))},
		{Name: "qStuck", YQL: qStuck, Params: stuckParams(contracts.StateMerging, now, 10), Scan: saga},
		{Name: "qOutboxStatus", YQL: qOutboxStatus, Params: outboxStatusParams("e"), Scan: ydbcheck.Scan(scanSentAt)},
		{Name: "qInFlightCounts", YQL: qInFlightCounts, Params: inFlightParams(), Scan: ydbcheck.Scan2(scanInFlightCount)},
		{Name: "qFinalCounts", YQL: qFinalCounts, Scan: ydbcheck.Scan2(scanFinalCount), Scans: "16 counter rows"},
		{Name: "qOldestOfState", YQL: qOldestOfState, Params: stateParams(contracts.StateMerged), Scan: ydbcheck.Scan(scanOldest)},
		{Name: "qStateCount", YQL: qStateCount, Params: stateCountParams(contracts.StateMerged, "p"), Scan: ydbcheck.Scan(scanSagas)},
		{Name: "qPutStateCount", YQL: qPutStateCount, Params: putStateCountParams(contracts.StateMerged, "p", 1)},
		{Name: "qRecentTransitions", YQL: string(qRecentTransitions), Params: recentParams(ledger.StepWindow{Limit: 10}), Scan: ydbcheck.Scan(scanStepRow)},
		{Name: "qListState", YQL: qListState, Params: list(ledger.Filter{Limit: 10, State: contracts.StateMerged}, qListState), Scan: saga},
		{Name: "qListStateAfter", YQL: qListStateAfter, Params: list(ledger.Filter{Limit: 10, State: contracts.StateMerged, After: after}, qListStateAfter), Scan: saga},
		{Name: "qListRepo", YQL: qListRepo, Params: list(ledger.Filter{Limit: 10, Repo: "acme/a"}, qListRepo), Scan: saga},
		{Name: "qListRepoAfter", YQL: qListRepoAfter, Params: list(ledger.Filter{Limit: 10, Repo: "acme/a", After: after}, qListRepoAfter), Scan: saga},
		{Name: "qListStuck", YQL: qListStuck, Params: listStuckParams(stuck, contracts.StateMerging, now), Scan: saga},
		{Name: "qListStuck (next page)", YQL: qListStuck, Params: listStuckParams(ledger.Filter{Stuck: true, Limit: 10, After: after}, contracts.StateMerging, now), Scan: saga},
	})
}
