// Package bleveindex is the indexer's search index: a bleve (scorch) index
// on disk of merged pull requests, one document per PR id, searched with
// bleve's query-string syntax, hits highlighted.
//
// A bleve index has a single writer. Open takes the index's file lock and
// gives up after a lock timeout (ErrLocked) instead of blocking forever.
// The indexer opens it with OpenWriter (writer.go): the instance holding
// <dir>/writer.lock is the one that consumes the saga's notified events; a
// second instance waits as a standby and takes over when it dies.
package bleveindex
