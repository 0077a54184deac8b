package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// The README's `nats` CLI example, as a new user runs it: its id comes
// from what every machine has (no uuidgen), it publishes to JetStream with
// an acknowledgement, and the event it describes (subject, headers, body,
// taken from the README's text) merges the PR on a real stack.
func TestREADMENATSExample(t *testing.T) {
	readme := readFile(t, "../../README.md")
	start := strings.Index(readme, "ID=req-")
	if start < 0 {
		t.Fatal("README has no nats example starting with ID=req-")
	}
	block := readme[start:]
	block = block[:strings.Index(block, "```")]
	if strings.Contains(readme, "uuidgen)") || !strings.Contains(block, "pub --jetstream prsaga.merge.requested") {
		t.Fatalf("the README's nats example must not need uuidgen and must publish with --jetstream:\n%s", block)
	}
	idLine, _, _ := strings.Cut(block, "       #")
	out, err := exec.Command("sh", "-c", idLine+"; printf %s \"$ID\"").Output()
	if err != nil {
		t.Fatalf("%s: %v", idLine, err)
	}
	id := string(out)
	if err := contracts.ValidateEventID(id); err != nil || len(id) < 12 {
		t.Fatalf("the README's id %q: %v", id, err)
	}

	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setCI(t, c, "acme/widgets", head, "success")
	body := regexp.MustCompile(`(?s)prsaga\.merge\.requested \\\n\s+"(.*?)" \\\n`).FindStringSubmatch(block)
	if body == nil {
		t.Fatalf("no body in the README's example:\n%s", block)
	}
	data := strings.NewReplacer(`\"`, `"`, "$HEAD_SHA", head).Replace(body[1])
	msg := nats.NewMsg("prsaga.merge.requested")
	msg.Data = []byte(data)
	for _, h := range regexp.MustCompile(`-H "([^:"]+):([^"]*)"`).FindAllStringSubmatch(block, -1) {
		msg.Header.Set(h[1], strings.ReplaceAll(h[2], "$ID", id))
	}
	nc, err := nats.Connect(st.NATS.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil || ack.Duplicate {
		t.Fatalf("acknowledged publish: %+v %v", ack, err)
	}
	s, err := c.Wait(ctx, "acme/widgets#43", id)
	if err != nil || s.State != contracts.StateMerged {
		t.Fatalf("the README's event: %+v %v; want MERGED", s, err)
	}
}
