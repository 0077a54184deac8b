package webhook

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	for _, ok := range []string{
		"https://hooks.example.com/prsaga/T0K3N?sig=abc",
		"http://hooks.example.com:8080/",
		"HTTPS://Hooks.Example.com",
		"https://[2001:db8::1]:443/x",
		"https://192.0.2.7:8443/hook",
		"https://hooks.example.com./x",
		"https://bücher.example/x",
		"https://my_hooks.example/x",
		"https://b%C3%BCcher.example/x",
	} {
		if err := ValidateURL(ok); err != nil {
			t.Errorf("ValidateURL(%q) = %v, want nil", ok, err)
		}
	}
	for name, bad := range map[string]string{
		"empty":             "",
		"too long":          "https://h.example/" + strings.Repeat("a", MaxURLLength),
		"ftp":               "ftp://h.example/T0K3N",
		"javascript":        "javascript:alert(1)",
		"no scheme":         "h.example/T0K3N",
		"no host":           "https:///T0K3N",
		"opaque":            "http:T0K3N",
		"userinfo":          "https://user:T0K3N@h.example/",
		"user only":         "https://T0K3N@h.example/",
		"port 0":            "https://h.example:0/T0K3N",
		"big port":          "https://h.example:70000/T0K3N",
		"bad port":          "https://h.example:x/T0K3N",
		"control":           "https://h.example/T0K3N\n",
		"bad escape":        "https://h.example/%zzT0K3N",
		"space host":        "https://h example/T0K3N",
		"only scheme":       "https://",
		"not utf-8":         "https://]\x80000/T0K3N",
		"escaped not utf-8": "https://h%80.example/T0K3N",
		"bracket":           "https://h]x.example/T0K3N",
		"empty label":       "https://h..example/T0K3N",
		"dash label":        "https://-h.example/T0K3N",
		"long label":        "https://" + strings.Repeat("h", 64) + ".example/T0K3N",
		"long name":         "https://" + strings.Repeat("h.", 127) + "example/T0K3N",
		"zone":              "https://[fe80::1%25eth0]/T0K3N",
		"symbol":            "https://h!x.example/T0K3N",
	} {
		err := ValidateURL(bad)
		if !errors.Is(err, ErrBadURL) {
			t.Errorf("%s: ValidateURL(%q) = %v, want ErrBadURL", name, bad, err)
			continue
		}
		if strings.Contains(err.Error(), "T0K3N") {
			t.Errorf("%s: error %q quotes the URL", name, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.example.com/prsaga/T0K3N?sig=abc#frag": "https://hooks.example.com",
		"http://user:pw@hooks.example.com:8080/T0K3N":         "http://hooks.example.com:8080",
		"https://[2001:db8::1]:443/T0K3N":                     "https://[2001:db8::1]:443",
		"not a url/T0K3N":                                     "(invalid url)",
		"https://h.example/%zzT0K3N":                          "(invalid url)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
