package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestSyncForce: POST /sync?force=1 (or true) forces with the bearer
// token; a signed webhook that asks to force is refused 403, unread, and
// triggers nothing; one that does not ask syncs unforced.
func TestSyncForce(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	signed := http.Header{"X-Hub-Signature-256": {sign(token, body)}}
	tests := []struct {
		name   string
		path   string
		header http.Header
		code   int
		want   string // in the answer
		forced []bool // the triggers
	}{
		{name: "token, no force", path: "/sync", header: bearer(token), code: 202, want: `"status": "sync requested"`, forced: []bool{false}},
		{name: "token, force=1", path: "/sync?force=1", header: bearer(token), code: 202, want: `"forced": true`, forced: []bool{true}},
		{name: "token, force=true", path: "/sync?force=true", header: bearer(token), code: 202, want: "maintenance windows or not", forced: []bool{true}},
		{name: "token, force without a value", path: "/sync?force", header: bearer(token), code: 202, forced: []bool{true}},
		{name: "token, force=0", path: "/sync?force=0", header: bearer(token), code: 202, forced: []bool{false}},
		{name: "token, force=false", path: "/sync?force=false", header: bearer(token), code: 202, forced: []bool{false}},
		{name: "token, force=yes", path: "/sync?force=yes", header: bearer(token), code: 400, want: `force="yes"`},
		{name: "signature, no force", path: "/sync", header: signed, code: 202, forced: []bool{false}},
		{name: "signature, force=1", path: "/sync?force=1", header: signed, code: 403, want: "force needs the bearer token"},
		{name: "signature, force=true", path: "/sync?force=true", header: signed, code: 403, want: "force needs the bearer token"},
		{name: "signature, force=0", path: "/sync?force=0", header: signed, code: 202, forced: []bool{false}},
		{name: "bad signature, force=1", path: "/sync?force=1", header: http.Header{"X-Hub-Signature-256": {"sha256=zz"}}, code: 401, want: "bearer token"},
		{name: "nothing, force=1", path: "/sync?force=1", code: 401, want: "bearer token"},
		{name: "wrong token, force=1", path: "/sync?force=1", header: bearer("guess"), code: 401},
	}
	var (
		mu       gosync.Mutex
		triggers []bool
	)
	srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.HandleSync(func(force bool) {
		mu.Lock()
		defer mu.Unlock()
		triggers = append(triggers, force)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			triggers = nil
			mu.Unlock()
			rec := do(srv, http.MethodPost, tt.path, tt.header, body)
			var text string
			if tt.code >= 400 {
				text = jsonError(t, rec, tt.code)
				if rec.Header().Get("Connection") != "close" {
					t.Errorf("a refused POST /sync keeps the connection (its body unread)")
				}
			} else {
				if rec.Code != tt.code {
					t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tt.code)
				}
				text = rec.Body.String()
				var a api.SyncAnswer
				if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Forced != tt.forced[0] {
					t.Errorf("answer %s (%v), want forced %v", rec.Body, err, tt.forced[0])
				}
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("answer %q lacks %q", text, tt.want)
			}
			mu.Lock()
			got := triggers
			mu.Unlock()
			if len(got) != len(tt.forced) || (len(got) == 1 && got[0] != tt.forced[0]) {
				t.Errorf("triggers %v, want %v", got, tt.forced)
			}
		})
	}
}

// TestDocumentWindow: the status document carries the maintenance window
// when the syncer has one, and no "window" key without.
func TestDocumentWindow(t *testing.T) {
	next := testNow.Add(20 * time.Hour)
	forced := testNow.Add(time.Minute)
	rep := sampleReport()
	rep.Window = &hsync.Window{Open: false, Next: next, ForcedUntil: forced}
	srv := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: rep})
	rec := do(srv, http.MethodGet, "/status", nil, "")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var w hsync.Window
	if err := json.Unmarshal(doc["window"], &w); err != nil || w.Open || !w.Next.Equal(next) || !w.ForcedUntil.Equal(forced) {
		t.Errorf("window %s (%v), want closed, next %s, forced until %s", doc["window"], err, next, forced)
	}

	srv = newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
	rec = do(srv, http.MethodGet, "/status", nil, "")
	if strings.Contains(rec.Body.String(), `"window"`) {
		t.Errorf("a host without windows shows a window:\n%s", rec.Body)
	}
}
