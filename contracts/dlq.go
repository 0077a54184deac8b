package contracts

// Dead letters on the wire (design §3). platform/bus writes them
// (DeadLetter), platform/dlq reads and redrives them; both spell them
// with these names. DLQStream, DLQSubjectPrefix, DLQSubject and
// DLQReasonHeader are in events.go.
const (
	// DLQSubjectHeader carries the subject a dead letter was taken from:
	// where a redrive publishes it again.
	DLQSubjectHeader = "Prsaga-Dlq-Subject"
	// DLQMsgIDPrefix begins a dead letter's Nats-Msg-Id (see DLQMsgID).
	DLQMsgIDPrefix = "dlq."

	// RedrivenFromHeader is the record of a redrive on the message put
	// back into stream PRSAGA: PRSAGA_DLQ:<seq>[,<seq>...], the dead
	// letters it was redriven from.
	RedrivenFromHeader = "Prsaga-Redriven-From"
	// RedrivenReasonHeader carries why the redriven message had been
	// dead-lettered (its DLQReasonHeader, which the copy does not keep).
	RedrivenReasonHeader = "Prsaga-Redriven-Reason"
)

// DLQMsgID is the Nats-Msg-Id of consumer's dead letter of the message
// whose id was origID: dlq.<consumer>.<original id>. One per consumer and
// message, so that a consumer dead-lettering the same message again is
// deduplicated and two consumers leave one dead letter each.
func DLQMsgID(consumer, origID string) string {
	return DLQMsgIDPrefix + consumer + "." + origID
}
