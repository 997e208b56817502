package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// fakeHolder records the holds asked for and answers with err.
type fakeHolder struct {
	mu    gosync.Mutex
	calls []string
	err   error
}

func (f *fakeHolder) Hold(_ context.Context, id, by, reason string) (hsync.Hold, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("hold %s by=%q reason=%q", id, by, reason))
	if errors.Is(f.err, hsync.ErrChangeUnderWay) {
		return hsync.Hold{By: by, Reason: reason, Since: testNow}, f.err
	}
	if f.err != nil {
		return hsync.Hold{}, f.err
	}
	return hsync.Hold{By: by, Reason: reason, Since: testNow}, nil
}

func (f *fakeHolder) Release(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "release "+id)
	return f.err
}

func (f *fakeHolder) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// TestHoldEndpoints: POST and DELETE /pods/{id}/hold need the bearer
// token (also on loopback), take an optional body of known fields within
// 4 KiB, and answer each of the holder's errors with its status.
func TestHoldEndpoints(t *testing.T) {
	saveErr := fmt.Errorf("hold web: save rollouts.json: %w", errors.New("no space left on device"))
	tests := []struct {
		name         string
		method, path string
		header       http.Header
		body         string
		holdErr      error
		code         int
		want         string // in the answer
		call         string // the holder's call, "" for none
	}{
		{name: "hold without token", method: "POST", path: "/pods/web/hold", body: `{"by":"alice"}`, code: 401, want: "token"},
		{name: "hold with a wrong token", method: "POST", path: "/pods/web/hold", header: bearer("guess"), code: 401, want: "token"},
		{name: "release without token", method: "DELETE", path: "/pods/web/hold", code: 401, want: "token"},
		{name: "hold, no body", method: "POST", path: "/pods/web/hold", header: bearer(token), code: 200,
			want: `"pod": "web"`, call: `hold web by="" reason=""`},
		{name: "hold with by and reason", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"by": "alice", "reason": "db migration"}`, code: 200,
			want: `"reason": "db migration"`, call: `hold web by="alice" reason="db migration"`},
		{name: "hold, empty object", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{}`, code: 200, call: `hold web by="" reason=""`},
		{name: "unknown field", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"by": "alice", "until": "tomorrow"}`, code: 400, want: `unknown field "until"`},
		{name: "not JSON", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `by=alice`, code: 400, want: "body"},
		{name: "two objects", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{} {}`, code: 400, want: "more than one JSON value"},
		{name: "cut object", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"by": "al`, code: 400, want: "body"},
		{name: "wrong type", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"by": 7}`, code: 400, want: "body"},
		{name: "body over 4 KiB", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"reason": "` + strings.Repeat("x", api.MaxHoldBody) + `"}`, code: 413, want: "4096"},
		{name: "body of 4 KiB", method: "POST", path: "/pods/web/hold", header: bearer(token), body: `{"reason": "` + strings.Repeat("x", api.MaxHoldBody-14) + `"}`, code: 200,
			call: `hold web by="" reason="` + strings.Repeat("x", api.MaxHoldBody-14) + `"`},
		{name: "bad ID", method: "POST", path: "/pods/Web_1/hold", header: bearer(token), holdErr: errors.New(`hold "Web_1": not a pod ID (an RFC 1123 DNS subdomain)`), code: 400,
			want: "not a pod ID", call: `hold Web_1 by="" reason=""`},
		{name: "hold not saved", method: "POST", path: "/pods/web/hold", header: bearer(token), holdErr: saveErr, code: 500,
			want: "no space left on device", call: `hold web by="" reason=""`},
		{name: "held, a change still ending", method: "POST", path: "/pods/web/hold", header: bearer(token), holdErr: hsync.ErrChangeUnderWay, code: 202,
			want: `"note": "held; a change of the pod under way`, call: `hold web by="" reason=""`},
		{name: "release", method: "DELETE", path: "/pods/web/hold", header: bearer(token), code: 200, want: `"released": "web"`, call: "release web"},
		{name: "release of a pod not held", method: "DELETE", path: "/pods/web/hold", header: bearer(token), holdErr: fmt.Errorf("release %q: %w", "web", hsync.ErrNotHeld), code: 404,
			want: "pod web is not held", call: "release web"},
		{name: "release not saved", method: "DELETE", path: "/pods/web/hold", header: bearer(token), holdErr: saveErr, code: 500, want: "no space left", call: "release web"},
		{name: "GET is not an endpoint", method: "GET", path: "/pods/web/hold", header: bearer(token), code: 405},
	}
	h := &fakeHolder{}
	// Loopback: the token is needed all the same.
	srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.HandleHolds(h)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.err = tt.holdErr
			h.take()
			rec := do(srv, tt.method, tt.path, tt.header, tt.body)
			var text string
			if tt.code >= 400 {
				text = jsonError(t, rec, tt.code)
			} else {
				if rec.Code != tt.code {
					t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tt.code)
				}
				text = rec.Body.String()
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("answer %q lacks %q", text, tt.want)
			}
			calls := h.take()
			switch {
			case tt.call == "" && len(calls) > 0:
				t.Errorf("holder called: %q, want no call", calls)
			case tt.call != "" && (len(calls) != 1 || calls[0] != tt.call):
				t.Errorf("holder calls %q, want [%q]", calls, tt.call)
			}
		})
	}

	t.Run("hold answer", func(t *testing.T) {
		h.err = nil
		rec := do(srv, http.MethodPost, "/pods/web/hold", bearer(token), `{"by": "alice", "reason": "db migration"}`)
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"pod": "web", "by": "alice", "reason": "db migration", "since": testNow.Format(time.RFC3339)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("answer %v, want %v", got, want)
		}
	})

	t.Run("no token configured: 404", func(t *testing.T) {
		h := &fakeHolder{}
		srv := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
		srv.HandleHolds(h)
		for _, m := range []string{http.MethodPost, http.MethodDelete} {
			for _, hd := range []http.Header{nil, bearer("")} {
				jsonError(t, do(srv, m, "/pods/web/hold", hd, ""), http.StatusNotFound)
			}
		}
		if c := h.take(); len(c) > 0 {
			t.Errorf("holder called without a token configured: %q", c)
		}
	})
}

// TestHoldsWithSyncer: the Syncer's own errors come out as the statuses
// Holder documents: a bad ID 400, a release of a pod not held 404, a hold
// that cannot be saved 500; a hold taken is on disk.
func TestHoldsWithSyncer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := hsync.New(synctest.NewFake(), hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: dir, Clock: clock.NewFake(testNow),
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := newServer(t, api.Options{Token: token, Loopback: true}, s)
	srv.HandleHolds(s)

	if msg := jsonError(t, do(srv, http.MethodPost, "/pods/Web_1/hold", bearer(token), ""), http.StatusBadRequest); !strings.Contains(msg, "not a pod ID") {
		t.Errorf("bad ID: %q", msg)
	}
	if msg := jsonError(t, do(srv, http.MethodDelete, "/pods/web/hold", bearer(token), ""), http.StatusNotFound); msg != "pod web is not held" {
		t.Errorf("release of a pod not held: %q", msg)
	}
	if rec := do(srv, http.MethodPost, "/pods/web/hold", bearer(token), `{"by": "alice", "reason": "db migration"}`); rec.Code != http.StatusOK {
		t.Fatalf("hold: %d %s", rec.Code, rec.Body)
	}
	saved, err := hsync.ReadRollouts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := saved["web"]; r.State != hsync.RolloutHeld || r.Hold == nil || r.Hold.By != "alice" || r.Hold.Reason != "db migration" {
		t.Errorf("saved rollout %+v, want held by alice", r)
	}
	if rec := do(srv, http.MethodDelete, "/pods/web/hold", bearer(token), ""); rec.Code != http.StatusOK {
		t.Fatalf("release: %d %s", rec.Code, rec.Body)
	}

	// stateDir a file: no hold can be saved.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := jsonError(t, do(srv, http.MethodPost, "/pods/api/hold", bearer(token), ""), http.StatusInternalServerError); !strings.Contains(msg, "hold api") {
		t.Errorf("hold not saved: %q", msg)
	}
}
