package gitrepo

// Journal is the merger's own record of the commits it puts on target
// branches, kept outside the repository (in the merger's database): it is
// what proves that a commit in a target's history is a merge prsaga made
// for a PR, and so what makes Merge idempotent across crashes.
//
// A commit's content cannot prove it: whoever can push a branch can write
// any message, trailer, author or committer, and a fast-forward or a merge
// commit brings their commits into the target as they are. The journal is
// written only by the merger, and only for the commit it is about to put on
// the target.
//
// Merge calls Record before it moves the ref, and moves it only once Record
// has returned nil; it calls Recorded after reading the target ref. So a
// commit that reached the target through a merger that died right after
// the ref update is always recorded, and every merger (replicas share the
// journal) that sees the moved ref also sees its record.
type Journal interface {
	// Recorded returns the commits recorded for the PR (any order; those
	// of merges that never reached the target included).
	Recorded(prID string) ([]string, error)
	// Record durably records e: once it returned nil, the record survives
	// a crash of the process (and, with a store that syncs, of the host).
	// Recording the same entry again is harmless.
	Record(e JournalEntry) error
}

// JournalEntry is one commit the merger is about to put on a target.
type JournalEntry struct {
	Repo          string // "owner/name"
	PRID          string // the PR the commit merges
	CorrelationID string // the saga run that wrote it ("" when none)
	TargetBranch  string
	Strategy      string // StrategyMerge or StrategySquash
	Commit        string // the new head of TargetBranch (40 hex)
	Base          string // the target head it is made onto (40 hex)
}
