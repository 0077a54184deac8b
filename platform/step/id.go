package step

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/google/uuid"

	"github.com/prsaga/prsaga/contracts"
)

// FollowID is the id of the one event service emits in answer to in: a
// UUIDv7 whose time is in's time plus a millisecond (so an answer sorts
// after what it answers) and whose other bits come from a hash of
// (service, in's id). The same input handled again — a redelivery after
// the inbox lost it, a deployment restored from a backup and catching up,
// two instances racing — answers under the same id, so JetStream's
// duplicate window and the next consumer's inbox drop the second answer
// instead of taking it for another event of the saga (design §5).
// Handlers emit their outcome under it; NewID is for events nothing
// caused (a request, an operator's retry).
func FollowID(service string, in contracts.Envelope) string {
	return deriveID(service, in.Event.ID(), in.Event.Time())
}

func deriveID(service, inputID string, at time.Time) string {
	h := sha256.Sum256([]byte("prsaga follow id\x00" + service + "\x00" + inputID))
	ms := at.Add(time.Millisecond).UnixMilli()
	if ms < 0 {
		ms = 0
	}
	var u uuid.UUID
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(ms)&(1<<48-1))
	copy(u[0:6], ts[2:8])
	copy(u[6:16], h[:10])
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	return u.String()
}
