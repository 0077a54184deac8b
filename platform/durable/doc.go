// Package durable writes small files so that neither a reader nor a crash
// ever finds half of one (the manifest that marks a backup complete, the
// record `prsaga dev` leaves for the client verbs), and syncs files and
// directories (the indexer's rebuild makes its swap of indexes durable).
package durable
