package notifier_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/notifier"
)

// bodySender records the bodies it is given.
type bodySender struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *bodySender) Send(_ context.Context, _ notifier.Watcher, _ string, body []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	return 1, nil
}

// The runner hands a handler the event with a traceparent naming the span
// of that handling. A merged event handled twice (its delivery row lost: a
// crash before the commit, a restore from a backup) must reach a watcher
// with the same body under its one delivery id, not one differing in the
// span id.
func TestOnMergedSendsTheSameBodyWhateverTheHandlingSpan(t *testing.T) {
	snd := &bodySender{}
	n := &notifier.Notifier{
		Store:  &store{watchers: []notifier.Watcher{{ID: "w1", Repo: "acme/widgets", URL: "https://hooks.example/a", Secret: "s"}}},
		Sender: snd,
	}
	orig := merged(t)
	for _, span := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"} {
		env := orig
		e := orig.Event.Clone()
		e.SetExtension(contracts.ExtTraceParent, span)
		env.Event = &e
		if _, err := n.OnMerged(context.Background(), env, discard); err != nil {
			t.Fatal(err)
		}
	}
	if len(snd.bodies) != 2 {
		t.Fatalf("%d sends, want 2", len(snd.bodies))
	}
	if !bytes.Equal(snd.bodies[0], snd.bodies[1]) {
		t.Fatalf("the same event was sent as two bodies:\n%s\n%s", snd.bodies[0], snd.bodies[1])
	}
	if bytes.Contains(snd.bodies[0], []byte("traceparent")) || !bytes.Contains(snd.bodies[0], []byte(`"id":"run1.m"`)) {
		t.Fatalf("body %s: want the merged event without the handling's trace context", snd.bodies[0])
	}
}
