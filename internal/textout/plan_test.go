package textout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/hostplan"
	hsync "github.com/hostlet/hostlet/sync"
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
			Plan(&buf, hostplan.Plan{Planned: true, Rejected: []hostplan.RejectedManifest{tc.rej}}, false)
			first, _, _ := strings.Cut(buf.String(), "\n")
			if first != tc.want {
				t.Errorf("got  %q\nwant %q", first, tc.want)
			}
		})
	}
}

var heldAt = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

const heldRev = "3f2a9c1e4b5d60718293a4b5c6d7e8f901234567"

// TestDiffTextHolds: a pod held back by a rollback is one line, its
// changes unlisted; a held pod lists what waits on it; the summary counts
// them apart, after the other counts, only when there are some.
func TestDiffTextHolds(t *testing.T) {
	hp := hostplan.Plan{Planned: true, Pods: []hostplan.PodPlan{
		{ID: "api", Source: "fleet", Revision: heldRev, Action: "update",
			Changes:  []hostplan.Change{{Container: "app", Action: "recreate", Reasons: []string{"image example.org/api:1 -> 2"}}},
			HeldBack: &hostplan.HeldBack{Revision: heldRev, Reason: "container app keeps crashing (CrashLoopBackOff)"}},
		{ID: "db", Source: "fleet", Action: "remove", Changes: []hostplan.Change{{Container: "app", Action: "remove"}},
			Held: &hsync.Hold{By: "bob", Since: heldAt}},
		{ID: "web", Source: "fleet", Revision: heldRev, Action: "update",
			Changes: []hostplan.Change{{Container: "app", Action: "recreate", Reasons: []string{"image example.org/web:1 -> 2"}}, {Container: "cache", Action: "none"}},
			Held:    &hsync.Hold{By: "alice", Reason: "db migration", Since: heldAt}},
		{ID: "worker", Source: "fleet", Revision: heldRev, Action: "create", Changes: []hostplan.Change{{Container: "app", Action: "create"}}},
	}, Summary: hostplan.Summary{Create: 1, Unchanged: 3, HeldBack: 1, Held: 2}}
	var b bytes.Buffer
	Plan(&b, hp, false)
	want := `~ pod api (fleet @ 3f2a9c1): held back: rolled back at 3f2a9c1e4b5d: container app keeps crashing (CrashLoopBackOff)
pod db (fleet): held by bob; waiting:
  - app  remove
pod web (fleet @ 3f2a9c1): held by alice: db migration; waiting:
  ~ app  recreate: image example.org/web:1 -> 2
+ pod worker (fleet @ 3f2a9c1)
  + app  create
Plan: 1 to create, 0 to recreate, 0 to remove, 3 unchanged, 0 rejected, 1 held back, 2 held.
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	// Nothing waits: the summary line as before.
	b.Reset()
	Plan(&b, hostplan.Plan{Planned: true, Summary: hostplan.Summary{Unchanged: 2}}, false)
	if got := b.String(); got != "Plan: 0 to create, 0 to recreate, 0 to remove, 2 unchanged, 0 rejected.\n" {
		t.Errorf("nothing waits: %q", got)
	}

	// JSON: heldBack {revision, reason}, held {by, reason, since}, and
	// the summary's counts.
	js, err := json.Marshal(hp)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"heldBack":{"revision":"` + heldRev + `","reason":"container app keeps crashing (CrashLoopBackOff)"}`,
		`"held":{"by":"alice","reason":"db migration","since":"2026-12-05T14:00:00Z"}`,
		`"held":{"by":"bob","since":"2026-12-05T14:00:00Z"}`,
		`"summary":{"create":1,"recreate":0,"restart":0,"remove":0,"unchanged":3,"rejected":0,"heldBack":1,"held":2}`,
	} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}
