package sqlite

// StuckQuery is the watchdog's query, for the plan test.
const StuckQuery = stuckQuery

// RecentTransitionsQuery is the step durations' window, for the plan test.
const RecentTransitionsQuery = recentTransitionsQuery

// StateCountsQuery is the counts' query, for the plan test.
const StateCountsQuery = stateCountsQuery

// EventAndSagaQuery is the projection's first read, for the plan test.
const EventAndSagaQuery = eventAndSagaQuery
