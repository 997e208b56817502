package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/notify/chatwire"
)

// request is the JSON of a request.
func request(t *testing.T, op, url, text string) string {
	t.Helper()
	b, err := json.Marshal(chatwire.Request{Op: op, URL: url, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheck: a URL shoutrrr knows passes; one it does not is refused
// with one line that names no part of the URL.
func TestCheck(t *testing.T) {
	const token = "T0KEN-secret"
	tests := []struct {
		name string
		url  string
		code int
		want string
	}{
		{name: "slack", url: "slack://hook:WNA3PBYV6-F20DUQND3RQ-Webc4MAvoacrpPakR8phF0zi@webhook", code: chatwire.ExitOK},
		{name: "generic", url: "generic://hooks.example.com/" + token, code: chatwire.ExitOK},
		{name: "unknown scheme", url: "slak://" + token + "@x", code: chatwire.ExitRefused,
			want: `scheme "slak" is neither http(s) nor a chat service shoutrrr knows (slack, discord, telegram, smtp, ...)`},
		{name: "bad telegram URL", url: "telegram://" + token + "@telegram", code: chatwire.ExitRefused,
			want: "not a valid telegram URL (see shoutrrr's docs for telegram)"},
		{name: "no scheme", url: token, code: chatwire.ExitRefused, want: "the URL has no scheme (slack://, ...)"},
		{name: "not a URL", url: "generic://h/%zz" + token, code: chatwire.ExitRefused, want: "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(strings.NewReader(request(t, chatwire.OpCheck, tt.url, "")), &stderr); code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if got := strings.TrimSuffix(stderr.String(), "\n"); got != tt.want {
				t.Errorf("stderr %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSend: the text is sent through shoutrrr's generic service; a failed
// send exits 1 with one line that holds no part of the URL that may be a
// token.
func TestSend(t *testing.T) {
	const token = "tok3n-in-the-path"
	status := http.StatusOK
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.URL.Path+" "+string(b))
		w.WriteHeader(status)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "generic://", 1) + "/hooks/" + token + "?disabletls=yes"

	var stderr bytes.Buffer
	if code := run(strings.NewReader(request(t, chatwire.OpSend, url, "hostlet h: failed api\nboom")), &stderr); code != chatwire.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "/hooks/" + token + " hostlet h: failed api\nboom"; len(got) != 1 || got[0] != want {
		t.Errorf("received %q, want %q", got, want)
	}

	status = http.StatusBadGateway
	stderr.Reset()
	if code := run(strings.NewReader(request(t, chatwire.OpSend, url, "x")), &stderr); code != chatwire.ExitRefused {
		t.Fatalf("exit %d, want %d", code, chatwire.ExitRefused)
	}
	line := stderr.String()
	if !strings.HasPrefix(line, "send: ") || strings.Count(line, "\n") != 1 || strings.Contains(line, token) {
		t.Errorf("stderr %q: want one line starting with send:, without the token", line)
	}
}

// TestBadRequest: an input that is not a request exits 2, its error
// quoting no input.
func TestBadRequest(t *testing.T) {
	const token = "T0KEN-secret"
	for _, in := range []string{
		"",
		"{",
		"[]",
		`{"op": "check", "url": 42, "text": "` + token + `"}`,
		`{"op": "nope", "url": "generic://h/` + token + `"}`,
		`{"op": "check"}`,
		request(t, chatwire.OpSend, "generic://h/"+token, strings.Repeat("x", chatwire.MaxRequest)),
	} {
		var stderr bytes.Buffer
		if code := run(strings.NewReader(in), &stderr); code != chatwire.ExitBadRequest {
			t.Errorf("input of %d bytes: exit %d, want %d", len(in), code, chatwire.ExitBadRequest)
		}
		if strings.Contains(stderr.String(), token) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("stderr %q: want one line, without the token", stderr.String())
		}
	}
}
