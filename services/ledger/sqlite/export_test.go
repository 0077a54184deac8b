package sqlite

// StuckQuery is the watchdog's query, for the plan test.
const StuckQuery = stuckQuery
