package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestDialAddr: an unspecified listen host is reached on loopback.
func TestDialAddr(t *testing.T) {
	for listen, want := range map[string]string{
		":10260":             "127.0.0.1:10260",
		"0.0.0.0:10260":      "127.0.0.1:10260",
		"[::]:10260":         "[::1]:10260",
		"127.0.0.1:10260":    "127.0.0.1:10260",
		"10.0.0.5:10260":     "10.0.0.5:10260",
		"localhost:10260":    "localhost:10260",
		"host.example:10260": "host.example:10260",
	} {
		if got := DialAddr(listen); got != want {
			t.Errorf("DialAddr(%q) = %q, want %q", listen, got, want)
		}
	}
}

// fakeAPI answers as the API does: holds and syncs with the token,
// /status of host web-1 with or without it, a refusal with its message.
func fakeAPI(t *testing.T, token string) *httptest.Server {
	t.Helper()
	answer := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		answer(w, http.StatusOK, api.Document{Hostname: "web-1", Version: "v1"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			answer(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		switch r.Method + " " + r.URL.RequestURI() {
		case "POST /pods/web/hold":
			var req api.HoldRequest
			b, _ := io.ReadAll(r.Body)
			if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &req) != nil {
				answer(w, http.StatusBadRequest, map[string]string{"error": "bad body"})
				return
			}
			answer(w, http.StatusOK, api.HoldAnswer{Pod: "web", Hold: hsync.Hold{By: req.By, Reason: req.Reason, Since: time.Unix(0, 0)}})
		case "DELETE /pods/web/hold":
			answer(w, http.StatusOK, api.ReleaseAnswer{Released: "web"})
		case "DELETE /pods/cache/hold":
			answer(w, http.StatusConflict, map[string]string{"error": "pod cache is not held"})
		case "POST /sync?force=1":
			answer(w, http.StatusAccepted, api.SyncAnswer{Status: "sync requested, forced", Forced: true})
		case "POST /sync":
			w.WriteHeader(http.StatusTeapot) // no message
		default:
			http.NotFound(w, r)
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestClientAnswersAndRefusals: each method returns the API's typed
// answer; a refusal is a RefusedError saying the API's message (or, with
// none, the method, URL and status); an API nobody answers on says it is
// unreachable.
func TestClientAnswersAndRefusals(t *testing.T) {
	ts := fakeAPI(t, "t0ken")
	addr := strings.TrimPrefix(ts.URL, "http://")
	c := New(addr, "t0ken")
	ctx := t.Context()

	if ans, err := c.Hold(ctx, "web", api.HoldRequest{By: "alice", Reason: "db migration"}); err != nil || ans.By != "alice" || ans.Reason != "db migration" {
		t.Errorf("Hold: %+v, %v", ans, err)
	}
	if ans, err := c.Release(ctx, "web"); err != nil || ans.Released != "web" {
		t.Errorf("Release: %+v, %v", ans, err)
	}
	if ans, err := c.Sync(ctx, true); err != nil || !ans.Forced {
		t.Errorf("Sync(force): %+v, %v", ans, err)
	}
	var refused *RefusedError
	if _, err := c.Release(ctx, "cache"); !errors.As(err, &refused) || err.Error() != "pod cache is not held" || refused.Status != "409 Conflict" {
		t.Errorf("Release of a pod not held: %v, want the API's message", err)
	}
	if _, err := c.Sync(ctx, false); err == nil || err.Error() != "POST "+ts.URL+"/sync: 418 I'm a teapot" {
		t.Errorf("Sync refused without a message: %v", err)
	}
	if _, err := New(addr, "guess").Hold(ctx, "web", api.HoldRequest{}); err == nil || err.Error() != "missing or wrong bearer token" {
		t.Errorf("Hold with a wrong token: %v", err)
	}

	if doc, err := New(addr, "").Status(ctx, "web-1"); err != nil || doc.Version != "v1" {
		t.Errorf("Status: %+v, %v", doc, err)
	}
	if _, err := c.Status(ctx, "web-2"); err == nil || err.Error() != `the local API at `+addr+` is host "web-1", not "web-2"; configure etcd.endpoints to ask other hosts` {
		t.Errorf("Status of another host: %v", err)
	}

	ts.Close()
	if _, err := c.Release(ctx, "web"); err == nil || !strings.HasPrefix(err.Error(), "the local API is unreachable: ") {
		t.Errorf("Release, API down: %v", err)
	}
	if _, err := c.Status(ctx, "web-1"); err == nil || !strings.HasPrefix(err.Error(), "host web-1 unreachable: ") {
		t.Errorf("Status, API down: %v", err)
	}
}
