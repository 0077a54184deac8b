package ydb

import pydb "github.com/prsaga/prsaga/platform/ydb"

// The ledger's YQL. Every value is a typed parameter; the statements are
// constants (one per filter shape of the list, rather than text assembled
// per call). Reads of a secondary index name it with VIEW.

const sagaColumns = `pr_id, repo, correlation_id, state, failed_step, last_error, timed_out,
    attempts, merge_sha, merged, version, created_at, updated_at`

const (
	qPing = `SELECT pr_id FROM pr_saga WHERE pr_id = $pr_id`

	qSaga = `SELECT ` + sagaColumns + ` FROM pr_saga WHERE pr_id = $pr_id`
	// The version read before a conditional write (SaveSaga).
	qSagaVersion = `SELECT version FROM pr_saga WHERE pr_id = $pr_id`
	// The whole row, written after qSagaVersion in the same transaction.
	qPutSaga = `UPSERT INTO pr_saga (` + sagaColumns + `)
VALUES ($pr_id, $repo, $correlation_id, $state, $failed_step, $last_error, $timed_out,
    $attempts, $merge_sha, $merged, $version, $created_at, $updated_at)`

	// One point of the key (shard, event_id).
	qEventRecorded = `SELECT event_id FROM saga_event WHERE shard = $shard AND event_id = $event_id`
	qRecordEvent   = `UPSERT INTO saga_event (shard, event_id, pr_id, correlation_id, corr_shard, type, status, reason, received_at, event)
VALUES ($shard, $event_id, $pr_id, $correlation_id, $corr_shard, $type, $status, $reason, $received_at, $event)`

	// A range of the primary key (pr_id, seq).
	qLastSeq        = `SELECT MAX(seq) AS max_seq FROM saga_transition WHERE pr_id = $pr_id`
	qAddTransitions = `UPSERT INTO saga_transition
SELECT pr_id, corr_shard, ` + transitionColumn + ` FROM AS_TABLE($transitions)`
	transitionColumn = `seq, correlation_id, from_state, to_state, reason, event_id, inferred, actor, at`
	qTransitions     = `SELECT ` + transitionColumn + ` FROM saga_transition WHERE pr_id = $pr_id ORDER BY seq`
	qLastTransition  = `SELECT ` + transitionColumn + ` FROM saga_transition WHERE pr_id = $pr_id ORDER BY seq DESC LIMIT 1`

	eventColumns = `event_id, pr_id, correlation_id, type, status, reason, received_at, event`
	// idx_event_correlation (corr_shard, correlation_id, type, received_at).
	qLatestEvent = `SELECT ` + eventColumns + `
FROM saga_event VIEW idx_event_correlation
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id AND type = $type
ORDER BY received_at DESC, event_id DESC
LIMIT 1`
	qAnyEventOfRun = `SELECT event FROM saga_event VIEW idx_event_correlation
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id LIMIT 1`
	qEventsOfRun = `SELECT ` + eventColumns + `
FROM saga_event VIEW idx_event_correlation
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id
ORDER BY received_at, event_id
LIMIT $limit`
	// idx_event_pr (pr_id, received_at).
	qEventsOfPR = `SELECT ` + eventColumns + `
FROM saga_event VIEW idx_event_pr
WHERE pr_id = $pr_id
ORDER BY received_at, event_id
LIMIT $limit`
	// idx_transition_correlation (corr_shard, correlation_id).
	qTransitionsOfRun = `SELECT pr_id, ` + transitionColumn + `
FROM saga_transition VIEW idx_transition_correlation
WHERE corr_shard = $corr_shard AND correlation_id = $correlation_id
ORDER BY at, seq
LIMIT $limit`

	// Answers older than $since are treated as gone (TTL deletes them late).
	qRetryAnswer     = `SELECT answer FROM retry_answer WHERE idempotency_key = $key AND created_at >= $since`
	qSaveRetryAnswer = `UPSERT INTO retry_answer (idempotency_key, pr_id, answer, created_at)
VALUES ($key, $pr_id, $answer, $created_at)`

	// The watchdog's query: one range of idx_saga_state (state, updated_at)
	// per in-flight state, oldest first — never a scan of pr_saga.
	qStuck = `SELECT ` + sagaColumns + `
FROM pr_saga VIEW idx_saga_state
WHERE state = $state AND updated_at < $cutoff
ORDER BY updated_at, pr_id
LIMIT $limit`

	// One point of the outbox's key (shard, id): the id alone is no
	// prefix of it, and would scan the table.
	qOutboxStatus = `SELECT sent_at FROM outbox WHERE shard = $shard AND id = $id`

	// StateCounts (item 7 of issue 15: no scan that grows with history).
	// In-flight sagas: counted from their ranges of idx_saga_state — as
	// many entries as sagas in flight. With GROUP BY every group has a row,
	// so MIN of the NOT NULL updated_at is a Timestamp, not Optional.
	qInFlightCounts = `SELECT state, COUNT(*) AS n, MIN(updated_at) AS oldest
FROM pr_saga VIEW idx_saga_state
WHERE state IN $states
GROUP BY state`
	// Sagas in a final state: the counter rows (a few per state).
	qFinalCounts = `SELECT state, sagas FROM saga_state_count`
	// The oldest saga of one state: the first entry of its range.
	qOldestOfState = `SELECT updated_at FROM pr_saga VIEW idx_saga_state
WHERE state = $state
ORDER BY updated_at
LIMIT 1`
	// One counter row, read before it is written in the same transaction.
	qStateCount    = `SELECT sagas FROM saga_state_count WHERE state = $state AND shard = $shard`
	qPutStateCount = `UPSERT INTO saga_state_count (state, shard, sagas) VALUES ($state, $shard, $sagas)`
)

// The window of the history step durations are computed from
// (ledger.StepWindow), newest first: one range of idx_transition_at_async
// (at, then the key pr_id, seq), which covers it. Ties on at put a PR's
// latest transition first, so a PR's transitions in the window are always
// its last ones. The index is ASYNC (migration 0002): an aggregate over a
// day may miss the last moment's commits (design §5), and the projection
// does not wait on the index's shard.
const qRecentTransitions pydb.Stale = `SELECT pr_id, seq, to_state, inferred, at
FROM saga_transition VIEW idx_transition_at_async
WHERE at >= $since
ORDER BY at DESC, pr_id DESC, seq DESC
LIMIT $limit`

// The list, newest first (updated_at DESC, pr_id DESC), one statement per
// index and per first-page/next-page; $limit is the page size plus one.
// The list of all sagas runs the by-state statement once per state (with
// $any_repo) and merges: no index on updated_at alone, whose every entry
// would go to its last partition. Next pages continue strictly after the
// cursor with a predicate on the index key that is a union of two key
// ranges — (updated_at < u) or (updated_at = u and pr_id < p) — rather
// than a tuple comparison.
const (
	orderNewest = `
ORDER BY updated_at DESC, pr_id DESC
LIMIT $limit`
	afterCursor = ` (updated_at < $after_updated_at OR (updated_at = $after_updated_at AND pr_id < $after_pr_id))`

	qListState = `SELECT ` + sagaColumns + ` FROM pr_saga VIEW idx_saga_state
WHERE state = $state AND ($any_repo OR repo = $repo)` + orderNewest
	qListStateAfter = `SELECT ` + sagaColumns + ` FROM pr_saga VIEW idx_saga_state
WHERE state = $state AND ($any_repo OR repo = $repo) AND` + afterCursor + orderNewest
	qListRepo = `SELECT ` + sagaColumns + ` FROM pr_saga VIEW idx_saga_repo
WHERE repo = $repo` + orderNewest
	qListRepoAfter = `SELECT ` + sagaColumns + ` FROM pr_saga VIEW idx_saga_repo
WHERE repo = $repo AND` + afterCursor + orderNewest
	// The stuck filter: one in-flight state's rows older than its cutoff
	// (the watchdog's predicate), queried per state and merged.
	qListStuck = `SELECT ` + sagaColumns + ` FROM pr_saga VIEW idx_saga_state
WHERE state = $state AND updated_at < $cutoff AND ($any_repo OR repo = $repo)
    AND ($from_start OR` + afterCursor + `)` + orderNewest
)
