package ledger

import (
	"encoding/json"
	"fmt"
	"time"
)

// RetryAnswerTTL is how long an Idempotency-Key is remembered: an older
// answer is forgotten on every store, even before it is pruned.
const RetryAnswerTTL = 24 * time.Hour

// EncodeRetryAnswer is a as the stores keep it (retry_answer.answer).
func EncodeRetryAnswer(a RetryAnswer) (string, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encode retry answer: %w", err)
	}
	return string(raw), nil
}

// StoredRetryAnswer is what a store's Tx.RetryAnswer answers for the
// retry_answer row it read: raw, or none (missing), or the read's error.
func StoredRetryAnswer(raw string, missing bool, err error) (RetryAnswer, bool, error) {
	if missing {
		return RetryAnswer{}, false, nil
	}
	if err != nil {
		return RetryAnswer{}, false, fmt.Errorf("read retry answer: %w", err)
	}
	var a RetryAnswer
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return RetryAnswer{}, false, fmt.Errorf("decode retry answer: %w", err)
	}
	return a, true, nil
}
