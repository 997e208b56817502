package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A hold's body is read whole up to MaxHoldBody: one of exactly that
// many bytes is taken, one a byte over is a *http.MaxBytesError (413);
// nothing, or only white space, is a hold without who or why; a body not
// UTF-8 is refused on one line that quotes none of it.
func TestHoldBodyBound(t *testing.T) {
	read := func(body string) (HoldRequest, error) {
		w := httptest.NewRecorder()
		return readHoldRequest(w, httptest.NewRequest(http.MethodPost, "/pods/web/hold", strings.NewReader(body)))
	}
	obj := `{"by":"ops","reason":"x"}`
	exact := obj + strings.Repeat(" ", MaxHoldBody-len(obj))
	if req, err := read(exact); err != nil || req.By != "ops" {
		t.Errorf("a body of exactly %d bytes: %+v, %v", MaxHoldBody, req, err)
	}
	var mbe *http.MaxBytesError
	if _, err := read(exact + " "); !errors.As(err, &mbe) {
		t.Errorf("a body of %d bytes: %v, want a MaxBytesError", MaxHoldBody+1, err)
	}
	for _, body := range []string{"", " \n\t"} {
		if req, err := read(body); err != nil || req != (HoldRequest{}) {
			t.Errorf("body %q: %+v, %v; want an empty request", body, req, err)
		}
	}
	bad := `{"by":"ops","reason":"caf` + "\xe9" + ` secret-word"}`
	_, err := read(bad)
	if err == nil || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret-word") || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("a body not UTF-8: %v", err)
	}
	// Not UTF-8 over the bound: the bound is said first (413).
	if _, err := read(strings.Repeat("\xff", MaxHoldBody+1)); !errors.As(err, &mbe) {
		t.Errorf("a body over the bound, not UTF-8: %v, want a MaxBytesError", err)
	}
}
