package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/hostplan"
)

// Every rejection line of the text plan begins with source:file, as
// validate's errors do, so one grep finds the file to fix.
func TestDiffTextRejectionBeginsWithSourceFile(t *testing.T) {
	tests := []struct {
		name string
		rej  hostplan.RejectedManifest
		want string
	}{
		{"file source", hostplan.RejectedManifest{ID: "api", Source: "local", File: "apps/api.yaml",
			Reasons: []string{`local:apps/api.yaml: pod "api": containers[0].image: required`}},
			"local:apps/api.yaml: rejected api: containers[0].image: required"},
		{"running version stays", hostplan.RejectedManifest{ID: "web", Source: "fleet", File: "web.yaml", Running: true,
			Reasons: []string{`fleet:web.yaml: pod "web": id: duplicate id`, `fleet:web.yaml: pod "web": version: required`}},
			"fleet:web.yaml: rejected web: id: duplicate id; version: required (the running version stays)"},
		{"single-document source", hostplan.RejectedManifest{ID: "cache", Source: "central",
			Reasons: []string{`central: pod "cache": containers[0].name: required`}},
			"central: rejected cache: containers[0].name: required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			hostPlan{Planned: true, Rejected: []hostplan.RejectedManifest{tc.rej}}.writeText(&buf, false)
			first, _, _ := strings.Cut(buf.String(), "\n")
			if first != tc.want {
				t.Errorf("got  %q\nwant %q", first, tc.want)
			}
		})
	}
}
