package emitted_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/emitted"
)

var at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func events(t *testing.T) (req, validated *event.Event) {
	t.Helper()
	r := contracts.Request{
		PRID: "acme/widgets#1", Repo: "acme/widgets", PRNumber: 1,
		SourceBranch: "feature", TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Strategy: "merge", RequestedBy: "alice",
	}
	req, err := contracts.NewRequested("req-1", "https://forge.example/acme", at, r, "")
	if err != nil {
		t.Fatal(err)
	}
	validated, err = contracts.Follow(req, "req-1.v", contracts.TypeMergeValidated, contracts.ServiceValidator, at,
		contracts.Validated{Request: r, BaseSHA: strings.Repeat("b", 40)})
	if err != nil {
		t.Fatal(err)
	}
	return req, validated
}

// What a transaction emits comes back decoded and opened, oldest first;
// On keeps one subject's.
func TestReadAndOn(t *testing.T) {
	db := sqlitetest.Open(t)
	req, validated := events(t)
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.Emit(req, validated) }); err != nil {
		t.Fatal(err)
	}
	got := emitted.Read(t, db)
	if len(got) != 2 {
		t.Fatalf("Read = %d events, want 2", len(got))
	}
	for i, want := range []*event.Event{req, validated} {
		ev := got[i]
		if ev.Row.ID != want.ID() || ev.Env.Event.ID() != want.ID() || ev.Env.Event.Type() != want.Type() {
			t.Errorf("event %d = row %s, %s %s; want %s %s", i, ev.Row.ID, ev.Env.Event.ID(), ev.Env.Event.Type(), want.ID(), want.Type())
		}
		if err := ev.Env.ValidatePayload(); err != nil {
			t.Errorf("event %d payload: %v", i, err)
		}
	}
	if p, ok := got[1].Env.Payload.(*contracts.Validated); !ok || p.BaseSHA != strings.Repeat("b", 40) {
		t.Errorf("second payload = %#v, want the Validated with its base", got[1].Env.Payload)
	}
	on := emitted.On(t, db, contracts.SubjectMergeValidated)
	if len(on) != 1 || on[0].Event.ID() != validated.ID() {
		t.Errorf("On(%s) = %d events, want the validated one", contracts.SubjectMergeValidated, len(on))
	}
	if none := emitted.On(t, db, contracts.SubjectStateChanged); len(none) != 0 {
		t.Errorf("On(%s) = %d events, want none", contracts.SubjectStateChanged, len(none))
	}
}

type outboxFunc func(ctx context.Context, limit int) ([]store.OutboxRow, error)

func (f outboxFunc) Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error) {
	return f(ctx, limit)
}

// fatal records a test's failure instead of failing the real test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func failure(t *testing.T, db emitted.Outbox) string {
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		emitted.Read(f, db)
	}()
	<-done
	return f.msg
}

// A row no consumer could read fails the test, naming the row.
func TestReadFailsOnUnreadableRows(t *testing.T) {
	req, _ := events(t)
	good, err := bus.OutboxRow(req, at)
	if err != nil {
		t.Fatal(err)
	}
	noHeader := good
	noHeader.ID, noHeader.Header = "bad-1", nil
	badPayload := good
	badPayload.ID, badPayload.Body = "bad-2", []byte(`{"pr_id": 7}`)
	for _, tc := range []struct {
		name string
		db   emitted.Outbox
		says string
	}{
		{"store error", outboxFunc(func(context.Context, int) ([]store.OutboxRow, error) { return nil, fmt.Errorf("disk gone") }), "disk gone"},
		{"not a CloudEvent", outboxFunc(func(context.Context, int) ([]store.OutboxRow, error) { return []store.OutboxRow{noHeader}, nil }), "bad-1"},
		{"payload that does not open", outboxFunc(func(context.Context, int) ([]store.OutboxRow, error) { return []store.OutboxRow{badPayload}, nil }), "bad-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := failure(t, tc.db); !strings.Contains(msg, tc.says) {
				t.Errorf("Read failed with %q, want a failure saying %q", msg, tc.says)
			}
		})
	}
	ok := outboxFunc(func(context.Context, int) ([]store.OutboxRow, error) { return []store.OutboxRow{good}, nil })
	if msg := failure(t, ok); msg != "" {
		t.Errorf("Read of a good row failed: %s", msg)
	}
}
