package fleet

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzHostRow reads any value as a host's status report (what any host of
// the fleet, or whoever can write its etcd key, reports), and any value as
// a release record, as fleet status and the fleet page do, and renders the
// page with the row. Whatever the values: no panic; an error that says
// why a report was not read is bounded; the page's HTML carries no markup
// of the report's.
func FuzzHostRow(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-01-02T03:04:05Z","labels":{"role":"canary"},"lastSync":{"start":"2026-01-02T03:04:00Z"},` +
			`"sources":[{"name":"fleet","type":"git","revision":"abc123"}],"pods":[{"id":"web","phase":"Running","rollout":{"state":"RolledBack"}}]}`,
		`{"labels":{"<script>alert(1)</script>":"\u001b[2J\n\u202e"},"sources":[{"error":"x\ny"}],"rejected":[{},{}]}`,
		`{"pods":[{"phase":"<img src=x onerror=alert(1)>"}],"lastSync":{"error":"</td></tr><tr><td>forged"}}`,
		`{"sources":null,"pods":{}}`, `[]`, `null`, `{"time":"not a time"}`, `{"a":` + strings.Repeat("[", 10_000),
		"\xff", `{"rev":"v1","state":"Halted","reason":"\u0000\u001b]52;c;x\u0007"}`,
	} {
		f.Add([]byte(s), "h1")
	}
	f.Fuzz(func(t *testing.T, value []byte, host string) {
		row, _ := hostRow(host, value)
		if len(row.Error) > 2*maxErrorBytes {
			t.Fatalf("an error of %d bytes: %.100q", len(row.Error), row.Error)
		}
		rec, err := decodeRelease("r1", value)
		if err != nil && len(err.Error()) > 2*maxErrorBytes {
			t.Fatalf("an error of %d bytes: %.100q", len(err.Error()), err)
		}
		view := View{LatestRelease: rec.Rev, ReleaseState: rec.State, ReleaseReason: rec.Reason, Hosts: []HostRow{row}}
		var b bytes.Buffer
		data := pageData{View: view, Now: time.Unix(0, 0), Refresh: RefreshSeconds, Details: map[string]HostDetail{}, Open: host}
		if err := pageTmpl.Execute(&b, data); err != nil {
			t.Fatalf("render the page: %v", err)
		}
		for _, markup := range []string{"<script>alert", "<img src=x", "</td></tr><tr><td>forged"} {
			if bytes.Contains(value, []byte(markup)) || strings.Contains(host, markup) {
				if bytes.Contains(b.Bytes(), []byte(markup)) {
					t.Fatalf("the page carries the report's markup %q", markup)
				}
			}
		}
	})
}
