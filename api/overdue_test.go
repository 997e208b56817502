package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	gosync "sync"
	"testing"

	"github.com/hostlet/hostlet/api"
)

// TestHealthzFailsWhileWorkIsOverdue (issue 30): a sync pass or a
// source's checks running past their deadline make /healthz fail (503,
// naming what is late) until they end, however recently the sync loop
// last ran, and an overdue sync is the status document's lastSync.error.
func TestHealthzFailsWhileWorkIsOverdue(t *testing.T) {
	var mu gosync.Mutex
	var now api.Overdue
	srv := newServer(t, api.Options{Loopback: true, Overdue: func() api.Overdue {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}, &fakeSyncer{report: sampleReport()})
	set := func(o api.Overdue) {
		mu.Lock()
		now = o
		mu.Unlock()
	}
	tests := []struct {
		name    string
		overdue api.Overdue
		want    []string
	}{
		{"sync", api.Overdue{Sync: "the sync pass has run for 6m0s, past its deadline of 5m0s"}, []string{"sync pass", "5m0s"}},
		{"source", api.Overdue{Sources: []string{"source local: checking its update has run for 2m0s"}}, []string{"source local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set(tt.overdue)
			msg := jsonError(t, do(srv, http.MethodGet, "/healthz", nil, ""), http.StatusServiceUnavailable)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("503 message %q does not name %q", msg, w)
				}
			}
			var doc api.Document
			if err := json.Unmarshal(do(srv, http.MethodGet, "/status", nil, "").Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if (doc.LastSync.Error != "") != (tt.overdue.Sync != "") || !strings.Contains(doc.LastSync.Error, tt.overdue.Sync) {
				t.Errorf("lastSync.error %q, want %q", doc.LastSync.Error, tt.overdue.Sync)
			}
			set(api.Overdue{})
			if rec := do(srv, http.MethodGet, "/healthz", nil, ""); rec.Code != http.StatusOK {
				t.Errorf("once the work ended: %d, want 200", rec.Code)
			}
		})
	}
}
