package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/config"
)

func TestRetentionDefaults(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionDLQ != 720*time.Hour {
		t.Errorf("DLQ retention %s, want 720h", c.RetentionDLQ)
	}
	if c.RetentionDeliveries != config.DefaultRetentionDeliveries {
		t.Errorf("delivery retention %s, want %s", c.RetentionDeliveries, config.DefaultRetentionDeliveries)
	}
	// The default follows the inbox and the DLQ when they keep longer.
	c, err = load(t, map[string]string{"PRSAGA_STREAM_MAX_AGE": "1000h", "PRSAGA_RETENTION_DLQ": "900h"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionDeliveries != 1024*time.Hour {
		t.Errorf("delivery retention with a 1000h stream: %s, want the inbox's 1024h", c.RetentionDeliveries)
	}
	c, err = load(t, map[string]string{"PRSAGA_RETENTION_DLQ": "2000h"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionDeliveries != 2000*time.Hour {
		t.Errorf("delivery retention with a 2000h DLQ: %s, want 2000h", c.RetentionDeliveries)
	}
	c, err = load(t, map[string]string{"PRSAGA_RETENTION_DELIVERIES": "800h", "PRSAGA_RETENTION_DLQ": "200h"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionDeliveries != 800*time.Hour || c.RetentionDLQ != 200*time.Hour {
		t.Errorf("set: deliveries %s, DLQ %s; want 800h, 200h", c.RetentionDeliveries, c.RetentionDLQ)
	}
}

func TestRetentionRefusals(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		mention string
	}{
		// Shorter than the inbox (default 168h + 24h).
		{map[string]string{"PRSAGA_RETENTION_DELIVERIES": "100h"}, "PRSAGA_RETENTION_INBOX"},
		{map[string]string{"PRSAGA_RETENTION_DELIVERIES": "300h"}, "PRSAGA_RETENTION_DLQ"},
		{map[string]string{"PRSAGA_RETENTION_DELIVERIES": "500h", "PRSAGA_RETENTION_INBOX": "600h"}, "PRSAGA_RETENTION_INBOX"},
		{map[string]string{"PRSAGA_RETENTION_DLQ": "0s"}, "PRSAGA_RETENTION_DLQ: must be positive"},
		{map[string]string{"PRSAGA_RETENTION_DLQ": "soon"}, "PRSAGA_RETENTION_DLQ"},
		{map[string]string{"PRSAGA_RETENTION_DELIVERIES": "-1h"}, "PRSAGA_RETENTION_DELIVERIES"},
	} {
		_, err := load(t, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.mention)
		}
	}
}
