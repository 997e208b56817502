package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{name: "no userinfo", raw: "https://example.org/repo.git", want: "https://example.org/repo.git"},
		{name: "token as user name", raw: "https://ghp_abc123@github.com/org/repo.git", want: "https://REDACTED@github.com/org/repo.git"},
		{name: "user and password", raw: "https://ops:hunter2@example.org:8443/x?y=1", want: "https://REDACTED@example.org:8443/x?y=1"},
		{name: "escaped password", raw: "http://ops:p%40ss%2Fw@127.0.0.1:80/a", want: "http://REDACTED@127.0.0.1:80/a"},
		{name: "unescaped @ in password", raw: "http://ops:p@ss@host/a", want: "http://REDACTED@host/a"},
		{name: "unescaped / in password", raw: "http://ops:pa/ss@host/a", want: "http://REDACTED@host/a"},
		{name: "no path", raw: "http://tok@host", want: "http://REDACTED@host"},
		{name: "ssh url", raw: "ssh://git@example.org/repo.git", want: "ssh://REDACTED@example.org/repo.git"},
		{name: "@ in the path", raw: "https://example.org/pkg@v1", want: "https://example.org/pkg@v1"},
		{name: "@ in the path after a port", raw: "https://example.org:8080/pkg@v1", want: "https://example.org:8080/pkg@v1"},
		{name: "scp-like address", raw: "git@github.com:org/repo.git", want: "git@github.com:org/repo.git"},
		{name: "not a url", raw: "just text", want: "just text"},
		{name: "empty", raw: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.raw); got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name, raw, bare, user, password string
		ok                              bool
	}{
		{name: "none", raw: "https://h/r.git", bare: "https://h/r.git"},
		{name: "token", raw: "https://tok@h/r.git", bare: "https://h/r.git", user: "tok", ok: true},
		{name: "user and password", raw: "https://u:p%2Fw@h:1/r", bare: "https://h:1/r", user: "u", password: "p/w", ok: true},
		{name: "unescaped", raw: "https://u:p/x@h/r", bare: "https://h/r", user: "u", password: "p/x", ok: true},
		{name: "scp-like", raw: "git@h:r.git", bare: "git@h:r.git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare, user, password, ok := Split(tc.raw)
			if bare != tc.bare || user != tc.user || password != tc.password || ok != tc.ok {
				t.Errorf("Split(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.raw, bare, user, password, ok, tc.bare, tc.user, tc.password, tc.ok)
			}
		})
	}
}

func TestText(t *testing.T) {
	raw := "http://ops:s3cr%2Ft@127.0.0.1:9/r.git"
	tests := []struct {
		name, msg string
	}{
		{name: "the url as written", msg: "GET " + raw + ": refused"},
		{name: "decoded password", msg: `Get "http://ops:s3cr/t@127.0.0.1:9/r.git/info/refs": refused`},
		{name: "quoted", msg: `parse "http://ops:s3cr/t@127.0.0.1:9/r.git": bad`},
		{name: "password alone", msg: "auth failed for s3cr/t"},
		{name: "another url", msg: "redirected to https://other:pw@example.org/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.msg, raw)
			for _, s := range []string{"s3cr", "ops:", "other:pw"} {
				if strings.Contains(got, s) {
					t.Errorf("Text(%q) = %q still holds %q", tc.msg, got, s)
				}
			}
		})
	}
	if got := Text("no url here: git failed", "https://git@h/r"); got != "no url here: git failed" {
		t.Errorf("a short user name was scrubbed from the text: %q", got)
	}
}

func TestError(t *testing.T) {
	base := errors.New("dial http://u:pw-1234@h/x: refused")
	err := fmt.Errorf("GET: %w", Error(base, "http://u:pw-1234@h/x"))
	if strings.Contains(err.Error(), "pw-1234") || !errors.Is(err, base) {
		t.Errorf("Error: %q (is base: %v), want the password hidden and the cause kept", err, errors.Is(err, base))
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestValues(t *testing.T) {
	base := errors.New(`create: invalid fluentd-address "tcp://ingest:S3cret@logs:24224x" (value "S3cret" quoted \"S3cret\"); token=abc`)
	err := Values(base, "S3cret", "tcp://ingest:S3cret@logs:24224x", "ab", "")
	if got := err.Error(); strings.Contains(got, "S3cret") || !strings.Contains(got, "abc") {
		t.Errorf("scrubbed %q: a value left, or a short value (ab) scrubbed", got)
	}
	if !errors.Is(err, base) {
		t.Error("errors.Is does not see the original")
	}
	if Values(nil, "x") != nil {
		t.Error("nil error not nil")
	}
	if e := errors.New("nothing here"); Values(e, "secret") != e {
		t.Error("an error without values is not returned as it is")
	}
}
