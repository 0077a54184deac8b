package runner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// BenchmarkRound is the runner's whole round per message — delivery,
// decode, inbox check, handler, one transaction {inbox, state, outbox},
// ack — and the relay publishing the outgoing event, with 256 messages
// waiting: the cost per message under load.
func BenchmarkRound(b *testing.B) {
	h := start(b, setup{})
	const window = 256
	var last uint64
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n := min(window, b.N-sent)
		for i := 0; i < n; i++ {
			r := validRequest()
			r.PRNumber = sent + i + 1
			r.PRID = contracts.PRID(r.Repo, r.PRNumber)
			e := requested(b, fmt.Sprintf("round-%d", sent+i), r)
			subject, _ := contracts.SubjectOf(e)
			msg, err := bus.Encode(subject, e)
			if err != nil {
				b.Fatal(err)
			}
			ack, err := h.b.JS.PublishMsgAsync(msg)
			if err != nil {
				b.Fatal(err)
			}
			_ = ack
		}
		<-h.b.JS.PublishAsyncComplete()
		sent += n
		last = uint64(sent)
		h.settled(last)
	}
	b.StopTimer()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, _, _ := h.db.OutboxStats(h.ctx()); n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
