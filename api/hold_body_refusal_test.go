package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A refused hold body is answered by what is wrong with it, never by its
// text: a field name of the body (up to MaxHoldBody bytes, any text an
// attacker chose) is not quoted back.
func TestHoldBodyRefusalQuotesNoneOfTheBody(t *testing.T) {
	name := strings.Repeat("Z", 3000)
	for _, body := range []string{
		`{"` + name + `":1}`,
		`{"by":"ops"} ` + name,
	} {
		w := httptest.NewRecorder()
		_, err := readHoldRequest(w, httptest.NewRequest(http.MethodPost, "/pods/web/hold", strings.NewReader(body)))
		if err == nil {
			t.Fatalf("%.40q taken", body)
		}
		if strings.Contains(err.Error(), "ZZZZ") {
			t.Errorf("refusal of %d bytes quotes the body: %.120s...", len(err.Error()), err)
		}
	}
}
