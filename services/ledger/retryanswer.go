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

// DecodeRetryAnswer reads an answer as the stores keep it.
func DecodeRetryAnswer(raw string) (RetryAnswer, error) {
	var a RetryAnswer
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return RetryAnswer{}, fmt.Errorf("decode retry answer: %w", err)
	}
	return a, nil
}
