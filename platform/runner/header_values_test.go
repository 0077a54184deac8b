package runner_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// A publisher outside prsaga that does not percent-encode header values
// (the nats CLI, sdk-go's nats_jetstream) sends "ce-clientref: 50%" meaning
// 50%: it must reach the handler, and the events that follow, as 50%.
// A value that is not UTF-8 once decoded is dead-lettered, naming the
// header.

// clientRefs are ce-clientref values as an outside publisher writes them,
// with what the handler must see.
var clientRefs = []struct{ id, raw, want string }{
	{"req-pct", "50%", "50%"},
	{"req-pct-zz", "100%zz", "100%zz"},
	{"req-pct-space", "50% off", "50% off"},
	{"req-pct-encoded", "caf%C3%A9", "café"},
}

// overlong is percent-encoded UTF-8 that the binding says MUST be refused.
const overlong = "a%C0%A0b"

func TestOutsidePublisherHeaderValuesNatsGo(t *testing.T) {
	checkHeaderValues(t, func(t *testing.T, h *harness, msg *nats.Msg, raw string) {
		msg.Header["ce-clientref"] = []string{raw} // written as is, no escaping
		if _, err := h.b.JS.PublishMsg(h.ctx(), msg); err != nil {
			t.Fatalf("publish raw headers: %v", err)
		}
	})
}

func TestOutsidePublisherHeaderValuesNatsCLI(t *testing.T) {
	cli, err := exec.LookPath("nats")
	if err != nil {
		t.Skip("SKIPPED: the nats CLI is not on PATH (go install github.com/nats-io/natscli/nats@v0.5.0); TestOutsidePublisherHeaderValuesNatsGo covers the same values in process")
	}
	home := t.TempDir() // no user context of the CLI may apply
	checkHeaderValues(t, func(t *testing.T, h *harness, msg *nats.Msg, raw string) {
		args := []string{"--server", h.nats.ClientURL(), "pub", "--jetstream", msg.Subject, string(msg.Data)}
		for k, vs := range msg.Header {
			if k == "ce-clientref" {
				continue
			}
			args = append(args, "-H", k+":"+vs[0])
		}
		args = append(args, "-H", "ce-clientref:"+raw)
		ctx, cancel := context.WithTimeout(h.ctx(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NATS_CONTEXT=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
}

func checkHeaderValues(t *testing.T, publish func(t *testing.T, h *harness, msg *nats.Msg, raw string)) {
	var mu sync.Mutex
	seen := map[string]string{} // event id → the clientref the handler saw
	h := start(t, setup{effect: func(_ context.Context, env contracts.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		seen[env.Event.ID()] = env.Meta.ClientRef
		return nil
	}})
	encode := func(id string) *nats.Msg {
		msg, err := bus.Encode(contracts.SubjectMergeRequested, requested(t, id, validRequest()))
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	for _, c := range clientRefs {
		publish(t, h, encode(c.id), c.raw)
	}
	publish(t, h, encode("req-overlong"), overlong)
	h.settled(h.publish(requested(t, "req-last", validRequest())))

	mu.Lock()
	defer mu.Unlock()
	for _, c := range clientRefs {
		got, ok := seen[c.id]
		if !ok {
			t.Errorf("ce-clientref %q: the handler never saw %s (dead-lettered?)", c.raw, c.id)
			continue
		}
		if got != c.want {
			t.Errorf("ce-clientref %q: the handler saw %q, want %q", c.raw, got, c.want)
		}
	}
	// What follows carries the value, escaped by the binding's rule.
	for _, e := range h.outgoing(contracts.SubjectMergeValidated) {
		for _, c := range clientRefs {
			env, err := contracts.Open(e)
			if err == nil && env.Meta.CorrelationID == c.id && env.Meta.ClientRef != c.want {
				t.Errorf("validated event of %s: clientref %q, want %q", c.id, env.Meta.ClientRef, c.want)
			}
		}
	}
	if _, ok := seen["req-overlong"]; ok {
		t.Errorf("ce-clientref %q (overlong UTF-8) reached the handler; want it dead-lettered", overlong)
	}
	dlq := h.deadLettered(1) // the overlong value
	checkCopyOf(t, dlq[0], "req-overlong")
	if r := dlq[0].Header.Get(contracts.DLQReasonHeader); !strings.Contains(r, "ce-clientref") || !strings.Contains(r, "UTF-8") {
		t.Errorf("DLQ reason %q does not name ce-clientref and UTF-8", r)
	}
}
