package ydb

import (
	"context"
	"fmt"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"

	pydb "github.com/prsaga/prsaga/platform/ydb"
)

// Retention of event bodies on YDB: a TTL deletes whole rows by age alone,
// and only the bodies of merged sagas may go, so this is a bounded update
// like SQLite's: merged sagas through idx_saga_state, their events'
// keys through idx_event_pr, the bodies emptied by key (UPDATE ON).
const (
	qMergedSagas = `SELECT pr_id, updated_at
FROM pr_saga VIEW idx_saga_state
WHERE state = $state AND updated_at < $cutoff AND updated_at > $after
ORDER BY updated_at, pr_id
LIMIT $limit`
	qEventKeysOfPR = `SELECT shard, event_id FROM saga_event VIEW idx_event_pr WHERE pr_id = $pr_id`
	qEmptyBodies   = `UPDATE saga_event ON SELECT shard, event_id, event FROM AS_TABLE($bodies)`
)

var _ ledger.BodyPruner = (*Tables)(nil)

// PruneBodies empties the event bodies of at most limit merged sagas, one
// transaction per saga. The cursor moves by updated_at alone (YDB's
// Timestamp has microseconds, as the rows do): sagas updated in the very
// microsecond a batch ended on wait for the next restart's first round.
func (s *Tables) PruneBodies(ctx context.Context, cutoff time.Time, after ledger.Cursor, limit int) (ledger.Cursor, int, int64, error) {
	sagas, err := pydb.Collect(ctx, s.db, qMergedSagas, mergedSagasParams(cutoff, after.UpdatedAt, limit), scanMerged)
	if err != nil {
		return after, 0, 0, fmt.Errorf("read merged sagas: %w", err)
	}
	var bodies int64
	next := after
	for _, m := range sagas {
		var n int64
		err := s.db.Update(ctx, func(stx store.Tx) error {
			tx, err := pydb.TxOf(stx)
			if err != nil {
				return err
			}
			var keys []types.Value
			if err := tx.Query(qEventKeysOfPR, prKey(m.pr), func(r query.Row) error {
				k, err := scanEventKey(r)
				keys = append(keys, k)
				return err
			}); err != nil {
				return err
			}
			n = int64(len(keys))
			if len(keys) == 0 {
				return nil
			}
			return tx.Exec(qEmptyBodies, emptyBodiesParams(keys...))
		})
		if err != nil {
			return next, 0, bodies, fmt.Errorf("prune event bodies of %s: %w", m.pr, err)
		}
		bodies += n
		next = ledger.Cursor{UpdatedAt: m.at, PRID: m.pr}
	}
	return next, len(sagas), bodies, nil
}

func mergedSagasParams(cutoff, after time.Time, limit int) ydbsdk.Params {
	if epoch := time.Unix(0, 0); after.Before(epoch) {
		after = epoch
	}
	return ydbsdk.ParamsBuilder().
		Param("$state").Text(string(contracts.StateMerged)).
		Param("$cutoff").Timestamp(cutoff).
		Param("$after").Timestamp(after).
		Param("$limit").Uint64(uint64(limit)).
		Build()
}

// merged is one row of qMergedSagas.
type merged struct {
	pr string
	at time.Time
}

func scanMerged(r query.Row) (merged, error) {
	var m merged
	err := r.Scan(&m.pr, &m.at)
	return m, err
}

// scanEventKey reads one row of qEventKeysOfPR as a row of qEmptyBodies.
func scanEventKey(r query.Row) (types.Value, error) {
	var shard uint32
	var id string
	if err := r.Scan(&shard, &id); err != nil {
		return nil, err
	}
	return emptyBody(shard, id), nil
}

// emptyBody is one row of qEmptyBodies: the event's key and an empty body.
func emptyBody(shard uint32, eventID string) types.Value {
	return types.StructValue(
		types.StructFieldValue("shard", types.Uint32Value(shard)),
		types.StructFieldValue("event_id", types.TextValue(eventID)),
		types.StructFieldValue("event", types.TextValue("")),
	)
}

func emptyBodiesParams(keys ...types.Value) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$bodies").BeginList().AddItems(keys...).EndList().Build()
}
