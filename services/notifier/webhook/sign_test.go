package webhook

import (
	"strings"
	"testing"
)

func TestSignVerify(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"id":"e1"}`)
	sig := Sign(secret, body)
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("Sign = %q, want sha256=<64 hex>", sig)
	}
	if !Verify(secret, body, sig) {
		t.Fatalf("Verify of its own signature = false")
	}
	for name, tc := range map[string]struct {
		secret, body []byte
		header       string
	}{
		"other secret":   {[]byte("other"), body, sig},
		"tampered body":  {secret, []byte(`{"id":"e2"}`), sig},
		"no prefix":      {secret, body, strings.TrimPrefix(sig, "sha256=")},
		"sha1 prefix":    {secret, body, "sha1=" + strings.TrimPrefix(sig, "sha256=")},
		"truncated":      {secret, body, sig[:len(sig)-2]},
		"not hex":        {secret, body, sig[:len(sig)-2] + "zz"},
		"empty":          {secret, body, ""},
		"trailing space": {secret, body, sig + " "},
	} {
		if Verify(tc.secret, tc.body, tc.header) {
			t.Errorf("%s: Verify = true, want false", name)
		}
	}
}

func TestDeliveryID(t *testing.T) {
	a := DeliveryID("01J0CORRELATION", "w1")
	if b := DeliveryID("01J0CORRELATION", "w1"); a != b {
		t.Fatalf("DeliveryID not stable: %q then %q", a, b)
	}
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("DeliveryID = %q, want 32 lower-case hex characters", a)
	}
	for _, other := range []string{
		DeliveryID("01J0CORRELATION", "w2"),
		DeliveryID("01J0CORRELATIOM", "w1"),
		DeliveryID("01J0CORRELATION\x00w", "1"), // no collision by concatenation
	} {
		if other == a {
			t.Errorf("DeliveryID collision: %q for different inputs", other)
		}
	}
	if err := validDeliveryID(a); err != nil {
		t.Errorf("DeliveryID %q is not a valid delivery id: %v", a, err)
	}
}
