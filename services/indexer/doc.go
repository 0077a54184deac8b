// Package indexer is the saga's last step: on a notified event it upserts
// the merged PR into the search index and answers indexed. Upserting by PR
// id makes a redelivery or a replay harmless.
package indexer
