package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/sources"
)

// hostlet status shows what the status document says went wrong with the
// state files and the sources' notices, and never an etcd endpoint's
// credentials.
func TestStatusTextShowsProblems(t *testing.T) {
	since := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	v := statusView{Host: "web-1", Alive: true, Doc: api.Document{
		Sources: []sources.Status{
			{Name: "push", Type: "push", Notice: "saved set unreadable: decode (kept as sources/push.json.corrupt-x)"},
			{Name: "git", Type: "git", Error: "fetch failed", Notice: "not delivered yet"},
		},
		StateErrors: []atomicfile.Problem{{File: "sources/push.json", Op: atomicfile.OpRead, Error: "decode: unexpected end", KeptAs: "sources/push.json.corrupt-x", Since: since}},
	}}
	var b bytes.Buffer
	if err := v.writeText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"notice: saved set unreadable: decode",
		"fetch failed; notice: not delivered yet",
		"state file problems (stateDir):",
		"sources/push.json: read failed since 2026-12-03T07:00:00Z: decode: unexpected end (kept as sources/push.json.corrupt-x)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := endpointsText([]string{"https://root:pa55@etcd.example.org:2379", "http://127.0.0.1:2379"}); strings.Contains(got, "pa55") || strings.Contains(got, "root") || !strings.Contains(got, "127.0.0.1:2379") {
		t.Errorf("endpointsText = %q, want no credentials", got)
	}
}
