// Package bleveindex is the indexer's search index: a bleve (scorch) index
// on disk of merged pull requests, one document per PR id, searched with
// bleve's query-string syntax, hits highlighted.
//
// A bleve index has a single writer. Open takes the index's file lock and
// gives up after a lock timeout, so a second indexer instance fails fast
// (ErrLocked) instead of blocking forever; the instance that holds the index
// is the one that consumes the saga's notified events.
package bleveindex
