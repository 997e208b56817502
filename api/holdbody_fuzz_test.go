package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHoldBody: any body of POST /pods/{id}/hold (after the token) is
// nothing, one object of the known fields within MaxHoldBody, or a
// refusal that says what is wrong on one line (answered to the client
// that sent it); it never panics.
func FuzzHoldBody(f *testing.F) {
	for _, s := range []string{
		"", `{"by":"alice","reason":"db migration"}`, `{"by":"a"}{"by":"b"}`, `{"bogus":1}`,
		`{"reason":"` + strings.Repeat("x", MaxHoldBody) + `"}`, `{"by":"\u001b[2J\n"}`, `[]`, `null`, `{"by":1}`, "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/pods/web/hold", strings.NewReader(body))
		req, err := readHoldRequest(w, r)
		if err == nil {
			if len(body) > MaxHoldBody {
				t.Fatalf("a body of %d bytes accepted", len(body))
			}
			if len(req.By)+len(req.Reason) > MaxHoldBody {
				t.Fatalf("fields of %d bytes from a body of %d", len(req.By)+len(req.Reason), len(body))
			}
			return
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 2*MaxHoldBody {
			t.Fatalf("refusal of %d bytes (or on several lines): %.200q", len(msg), msg)
		}
	})
}
