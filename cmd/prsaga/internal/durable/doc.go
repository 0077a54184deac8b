// Package durable writes the CLI's small files so that neither a reader
// nor a crash ever finds half of one: the manifest that marks a backup
// complete, the record `prsaga dev` leaves for the client verbs.
package durable
