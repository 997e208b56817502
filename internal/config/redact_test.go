package config

import (
	"strings"
	"testing"
)

// TestErrorsHideURLCredentials: a config error that quotes a URL shows it
// without its userinfo (password, or a token used as the user name).
func TestErrorsHideURLCredentials(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		secrets []string
		want    string
	}{
		{name: "http url with another scheme", body: "sources:\n- {name: a, type: http, url: \"ftp://ops:pw-9d2c1e@h/x\"}\n",
			secrets: []string{"pw-9d2c1e", "ops:"}, want: `"ftp://REDACTED@h/x" is not an http(s) URL`},
		{name: "token as user in a bad url", body: "sources:\n- {name: a, type: http, url: \"gopher://tok-4b8e0f@h/x\"}\n",
			secrets: []string{"tok-4b8e0f"}, want: "gopher://REDACTED@h/x"},
		{name: "bad template in a url", body: "sources:\n- {name: a, type: git, url: \"https://tok-7a1c3d:pw-2f6b9e@h/{{.Host}}.git\"}\n",
			secrets: []string{"tok-7a1c3d", "pw-2f6b9e"}, want: `key "sources[0].url"`},
		{name: "unparsable url", body: "sources:\n- {name: a, type: http, url: \"http://ops:pw-5c0a7d@h:port/x\"}\n",
			secrets: []string{"pw-5c0a7d"}, want: `key "sources[0].url"`},
		{name: "a url where a list is wanted", body: "etcd:\n  endpoints: {a: \"http://ops:pw-8e3f1b@h:2379\"}\n",
			secrets: []string{"pw-8e3f1b"}, want: "etcd.endpoints"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.body))
			if err == nil {
				t.Fatal("Load: no error")
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows %q", err, s)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
