package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Header names and the content type of a delivery.
const (
	HeaderSignature = "X-Prsaga-Signature"
	HeaderDelivery  = "X-Prsaga-Delivery"
	ContentType     = "application/cloudevents+json"
)

const sigPrefix = "sha256="

// Sign returns the signature header value of body under secret:
// "sha256=" followed by the lower-case hex HMAC-SHA256.
func Sign(secret, body []byte) string {
	return sigPrefix + hex.EncodeToString(mac(secret, body))
}

// Verify reports whether header is the signature of body under secret. The
// comparison takes constant time in the signature's contents; a header of
// the wrong shape is simply not valid.
func Verify(secret, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, sigPrefix)
	if !ok || len(hexSig) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, mac(secret, body))
}

func mac(secret, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return h.Sum(nil)
}

// DeliveryID names the delivery of one saga run's notification to one
// watcher: the same inputs always give the same id, so a redelivery carries
// the id of the first try and the receiver can drop it. The id is 32
// lower-case hex characters (a truncated SHA-256 of both inputs), safe as a
// header value whatever the inputs hold.
func DeliveryID(correlationID, watcherID string) string {
	h := sha256.New()
	// NUL separators: ("a", "b\x00c") and ("a\x00b", "c") must not collide
	// by concatenation; ids never contain NUL.
	h.Write([]byte("prsaga.delivery\x00"))
	h.Write([]byte(correlationID))
	h.Write([]byte{0})
	h.Write([]byte(watcherID))
	return hex.EncodeToString(h.Sum(nil))[:32]
}
