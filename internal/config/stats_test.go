package config

import (
	"strings"
	"testing"
)

// TestStatsCAdvisor: stats.cadvisor is empty by default (the engine's
// stats API), is read from the file or HOSTLET_STATS_CADVISOR, and must be
// an http(s) URL; an error quoting it hides its userinfo.
func TestStatsCAdvisor(t *testing.T) {
	t.Setenv("HOSTLET_CONFIG", "")
	t.Run("default", func(t *testing.T) {
		c, err := Load(writeConfig(t, "hostname: h\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Stats.CAdvisor != "" {
			t.Errorf("stats.cadvisor = %q, want empty", c.Stats.CAdvisor)
		}
	})
	t.Run("file", func(t *testing.T) {
		c, err := Load(writeConfig(t, "stats:\n  cadvisor: http://127.0.0.1:8080\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Stats.CAdvisor != "http://127.0.0.1:8080" {
			t.Errorf("stats.cadvisor = %q", c.Stats.CAdvisor)
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("HOSTLET_STATS_CADVISOR", "https://cadvisor.internal:8443/base/")
		c, err := Load(writeConfig(t, "hostname: h\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Stats.CAdvisor != "https://cadvisor.internal:8443/base/" {
			t.Errorf("stats.cadvisor = %q", c.Stats.CAdvisor)
		}
	})
	bad := []struct {
		name, value, want string
		secrets           []string
	}{
		{name: "no scheme", value: "127.0.0.1:8080", want: `key "stats.cadvisor": "127.0.0.1:8080" is not an http(s) URL`},
		{name: "other scheme", value: "unix:///run/cadvisor.sock", want: `is not an http(s) URL`},
		{name: "no host", value: "http:///api", want: `is not an http(s) URL`},
		{name: "query", value: "http://h:8080/?x=1", want: `no query or fragment`},
		{name: "credentials hidden", value: "ftp://ops:pw-6d1e9a@h:8080/", want: `"ftp://REDACTED@h:8080/" is not an http(s) URL`, secrets: []string{"pw-6d1e9a", "ops:"}},
		{name: "unparsable, credentials hidden", value: "http://ops:pw-0b7c4f@h:port/", want: `key "stats.cadvisor"`, secrets: []string{"pw-0b7c4f"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, "stats:\n  cadvisor: \""+tc.value+"\"\n"))
			if err == nil {
				t.Fatal("Load: no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows %q", err, s)
				}
			}
		})
	}
	t.Run("unknown key", func(t *testing.T) {
		_, err := Load(writeConfig(t, "stats:\n  cadvisorUrl: http://h\n"))
		if err == nil || !strings.Contains(err.Error(), `unknown key "stats.cadvisorurl"`) {
			t.Errorf("error %v, want unknown key stats.cadvisorurl (viper lowercases keys)", err)
		}
	})
}
