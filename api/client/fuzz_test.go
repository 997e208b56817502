package client

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/hostlet/hostlet/api"
)

// FuzzDecodeAnswer: any answer of a hostlet API (status code, body) is
// decoded without a panic; a status other than 2xx is a RefusedError
// whose message came from at most maxAnswer bytes of body; the status
// document reads at most its bound.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add(200, []byte(`{"pod":"web","hold":{"by":"alice"}}`))
	f.Add(409, []byte(`{"error":"pod web is not held"}`))
	f.Add(302, []byte(`<a href="http://elsewhere/">Found</a>`))
	f.Add(500, []byte("\x1b]0;pwned\x07\xff{"))
	f.Add(200, []byte(`{"hostname":"web-1","pods":[{"id":"web"}]}`))
	f.Fuzz(func(t *testing.T, code int, body []byte) {
		var ans api.HoldAnswer
		err := decodeAnswer(http.MethodPost, "http://h/pods/web/hold", code, "status", bytes.NewReader(body), &ans)
		var refused *RefusedError
		if code/100 != 2 {
			if !errors.As(err, &refused) {
				t.Fatalf("code %d: %v, want a RefusedError", code, err)
			}
			if len(refused.Message) > maxAnswer || !utf8.ValidString(refused.Message) {
				t.Fatalf("message of %d bytes from a body of %d", len(refused.Message), len(body))
			}
		}
		if _, err := decodeStatus("http://h/status", code, "status", bytes.NewReader(body)); code != http.StatusOK && !errors.As(err, &refused) {
			t.Fatalf("status code %d: %v, want a RefusedError", code, err)
		}
	})
}
