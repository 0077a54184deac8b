package server

import (
	"context"

	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

// webhookSender is the notifier's Sender over signed webhooks: the
// delivery id is derived from the run and the watcher (webhook.DeliveryID),
// so every try of one delivery carries the same X-Prsaga-Delivery.
type webhookSender struct{ s *webhook.Sender }

var _ notifier.Sender = webhookSender{}

func (w webhookSender) Send(ctx context.Context, to notifier.Watcher, correlationID string, body []byte) (int, error) {
	return w.s.Send(ctx, to.URL, to.Secret, webhook.DeliveryID(correlationID, to.ID), body)
}
