package httpapi

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// runFacts is what the events of a saga's current run say beyond its row:
// the PR as requested, whether the merge found the work already in the
// target, each watcher's latest delivery, and whether the last failure was
// marked retryable. Read from the ledger's own event log: no other
// service is asked.
type runFacts struct {
	// Deliveries: each watcher's latest outcome; a failed one's Status
	// holds the error the notifier gave.
	Request       contracts.Request
	HeadSHA       string
	AlreadyMerged bool
	Deliveries    []contracts.Delivery
	// Retryable of the latest step_failed (nil: none, or it timed out).
	Retryable *bool
	FailCode  string
}

// factsOf reads the facts of run correlationID from evs (oldest first).
func factsOf(evs []ledger.Event, correlationID string) runFacts {
	var f runFacts
	byWatcher := map[string]contracts.Delivery{}
	for _, e := range evs {
		if e.CorrelationID != correlationID {
			continue
		}
		ce, err := e.CloudEvent()
		if err != nil {
			continue
		}
		var p struct {
			contracts.Request
			AlreadyMerged bool                 `json:"already_merged"`
			Deliveries    []contracts.Delivery `json:"deliveries"`
			Retryable     *bool                `json:"retryable"`
			Code          string               `json:"code"`
			Reason        string               `json:"reason"`
		}
		if json.Unmarshal(ce.Data(), &p) != nil {
			continue
		}
		if f.Request.PRID == "" && p.Request.PRID != "" {
			f.Request = p.Request
		}
		switch ce.Type() {
		case contracts.TypeMerged:
			f.AlreadyMerged = p.AlreadyMerged
		case contracts.TypeNotified:
			for _, d := range p.Deliveries {
				byWatcher[d.WatcherID] = d
			}
		case contracts.TypeStepFailed:
			for _, d := range failedDeliveries(p.Code, p.Reason) {
				byWatcher[d.WatcherID] = d
			}
			f.Retryable, f.FailCode = p.Retryable, p.Code
		}
	}
	for _, d := range byWatcher {
		f.Deliveries = append(f.Deliveries, d)
	}
	sort.Slice(f.Deliveries, func(i, j int) bool { return f.Deliveries[i].WatcherID < f.Deliveries[j].WatcherID })
	f.HeadSHA = f.Request.HeadSHA
	return f
}

// failedDeliveries reads the watchers a webhook_failed step names in its
// reason ("webhook delivery failed for N of M watchers: <id> (<error>);
// ..."): step_failed carries no delivery list, and its reason is what the
// notifier recorded.
func failedDeliveries(code, reason string) []contracts.Delivery {
	if code != contracts.CodeWebhookFailed {
		return nil
	}
	_, list, ok := strings.Cut(reason, ": ")
	if !ok {
		return nil
	}
	var out []contracts.Delivery
	for _, part := range strings.Split(list, "; ") {
		id, why, ok := strings.Cut(part, " (")
		if !ok || id == "" || strings.ContainsAny(id, " :") {
			continue
		}
		out = append(out, contracts.Delivery{WatcherID: id, Status: "failed: " + strings.TrimSuffix(why, ")")})
	}
	return out
}
