// Package indexer is the saga's last step (design §6): on a notified event
// it upserts the merged PR — title, repo, branches, author, merge sha,
// merged-at, changed paths and the commit messages the merge brought in —
// into the search index and answers indexed. Upserting by PR id makes a
// redelivery or a replay harmless: one document per PR, always. The
// consumer hands it every event already delivered at once
// (OnNotifiedBatch): one index write for all of them, each event still
// answered on its own.
//
// An index that cannot be written is retried a few times inside the step
// (reopening the index between tries), then answered with
// step_failed(INDEXING, index_error) so that the failure is visible and
// retryable by an operator, rather than spent silently on redeliveries.
//
// This package is the domain only: indexer/bleveindex is the bleve index,
// indexer/gitlog reads commit messages from the bare repositories with
// go-git, indexer/httpapi serves the search route, and indexer/server wires
// them and the consumer.
package indexer
