package sqlite

import "sync"

// freshMax bounds the committed rows kept for the relay: a database whose
// relay does not run (or lags) drops them, and its relay reads the table.
const freshMax = 1024

// fresh are outbox rows committed since the relay last took them, in
// commit order: the relay publishes them without reading them back.
type fresh struct {
	mu   sync.Mutex
	rows []OutboxRow
	lost bool // rows were dropped: only the table has them all
}

func (f *fresh) add(rows []OutboxRow) {
	if len(rows) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost || len(f.rows)+len(rows) > freshMax {
		f.rows, f.lost = nil, true
		return
	}
	f.rows = append(f.rows, rows...)
}

// CommittedRows returns the outbox rows committed since the last call, in
// commit order, and whether that is all of them: false when some were
// dropped (too many waiting), and the table must be read instead. Rows
// committed by another process on the same file are never among them.
func (db *DB) CommittedRows() (rows []OutboxRow, complete bool) {
	db.fresh.mu.Lock()
	defer db.fresh.mu.Unlock()
	rows, complete = db.fresh.rows, !db.fresh.lost
	db.fresh.rows, db.fresh.lost = nil, false
	return rows, complete
}
