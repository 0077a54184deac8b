package config_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/config"
)

func load(t *testing.T, env map[string]string) (config.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	parse := config.Bind(fs, func(k string) string { return env[k] })
	if err := fs.Parse([]string{"--data", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return parse()
}

func TestReadTokenSettings(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadToken != "" || c.MetricsPublic || c.ClientToken() != "" {
		t.Errorf("defaults: read token %q, metrics public %v, client token %q; want none, false, none", c.ReadToken, c.MetricsPublic, c.ClientToken())
	}

	c, err = load(t, map[string]string{"PRSAGA_READ_TOKEN": "r", "PRSAGA_METRICS_PUBLIC": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadToken != "r" || !c.MetricsPublic || c.ClientToken() != "r" {
		t.Errorf("read token only: %q, metrics public %v, client token %q; want r, true, r", c.ReadToken, c.MetricsPublic, c.ClientToken())
	}

	c, err = load(t, map[string]string{"PRSAGA_READ_TOKEN": "r", "PRSAGA_API_TOKEN": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientToken() != "a" || strings.Join(c.ReadTokens(), ",") != "r,a" {
		t.Errorf("both tokens: client token %q, read tokens %v; want a, [r a]", c.ClientToken(), c.ReadTokens())
	}

	for _, tc := range []struct {
		env     map[string]string
		mention string
	}{
		{map[string]string{"PRSAGA_METRICS_PUBLIC": "maybe"}, "PRSAGA_METRICS_PUBLIC"},
		{map[string]string{"PRSAGA_READ_TOKEN": "same", "PRSAGA_API_TOKEN": "same"}, "PRSAGA_READ_TOKEN"},
	} {
		if _, err := load(t, tc.env); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.mention)
		}
	}
}
