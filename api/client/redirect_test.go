package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hostlet/hostlet/api"
)

// TestRedirectsAreRefusedNotFollowed: an answer redirecting elsewhere
// (another port of the same host gets the bearer token from Go's client,
// and a hold's POST turns into a GET there) is a refusal; the other end
// gets nothing, and a hold never reads as taken.
func TestRedirectsAreRefusedNotFollowed(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"pod":"web","hostname":"web-1"}`))
	}))
	t.Cleanup(elsewhere.Close)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		}))
		t.Cleanup(redirecting.Close)
		c := New(strings.TrimPrefix(redirecting.URL, "http://"), "s3cret-token")
		ctx := context.Background()
		_, holdErr := c.Hold(ctx, "web", api.HoldRequest{By: "alice"})
		_, statusErr := c.Status(ctx, "web-1")
		_, syncErr := c.Sync(ctx, false)
		for what, err := range map[string]error{"hold": holdErr, "status": statusErr, "sync": syncErr} {
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(refused.Status, http.StatusText(code)) {
				t.Errorf("%d: %s: %v, want a refusal with the redirect's status", code, what, err)
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times; a redirect must not be followed", n)
	}
}
