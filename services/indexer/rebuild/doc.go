// Package rebuild rebuilds the indexer's search index from the notified
// events of stream PRSAGA (`prsaga reindex`, design §6): every document is
// built by the indexer's own code (indexer.Indexer.Document), written into
// a new index next to the live one, and swapped in by a rename only once
// complete, so that a crash mid-rebuild leaves the live index as it was.
// The live index's lock is held from the start to the swap: an indexer
// running refuses the rebuild, and one starting meanwhile waits and fails
// rather than index events the rebuild would then hide.
package rebuild
