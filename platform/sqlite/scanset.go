package sqlite

// ScanSet reads the rows of a query of one text column into a set and
// closes them: the answer to the "which of these ids …" queries of the
// inbox and the adapters. It takes the query's results as they come
// (ScanSet(q.QueryContext(…))); the caller wraps the error with what it
// was reading.
func ScanSet(rows *Rows, err error) (map[string]bool, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		set[s] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return set, nil
}
