package textout

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// hostlet status shows what the status document says went wrong with the
// state files and the sources' notices, and never an etcd endpoint's
// credentials.
func TestStatusTextShowsProblems(t *testing.T) {
	since := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	v := HostStatus{Host: "web-1", Alive: true, Doc: api.Document{
		Sources: []sources.Status{
			{Name: "push", Type: "push", Notice: "saved set unreadable: decode (kept as sources/push.json.corrupt-x)"},
			{Name: "git", Type: "git", Error: "fetch failed", Notice: "not delivered yet"},
		},
		StateErrors: []atomicfile.Problem{{File: "sources/push.json", Op: atomicfile.OpRead, Error: "decode: unexpected end", KeptAs: "sources/push.json.corrupt-x", Since: since}},
	}}
	var b bytes.Buffer
	if err := Status(&b, v); err != nil {
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
	if got := Endpoints([]string{"https://root:pa55@etcd.example.org:2379", "http://127.0.0.1:2379"}); strings.Contains(got, "pa55") || strings.Contains(got, "root") || !strings.Contains(got, "127.0.0.1:2379") {
		t.Errorf("Endpoints = %q, want no credentials", got)
	}
}

// hostlet status says where each pod's update stands when that says
// something (rolled back, held, progressing), and the maintenance window
// at the top when the host has one; the rest reads as before.
func TestStatusTextRollouts(t *testing.T) {
	at := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	rev := "3f2a9c1e4b5d60718293a4b5c6d7e8f901234567"
	pod := func(id string, r *hsync.Rollout) hsync.PodStatus {
		return hsync.PodStatus{ID: id, Source: "fleet", Revision: rev, Phase: hsync.PhaseRunning, Rollout: r,
			Containers: []hsync.ContainerStatus{{Name: "app", Image: "demo:1", State: "running"}}}
	}
	doc := api.Document{
		Version: "v1", Time: at, LastSync: hsync.SyncInfo{Start: at, DurMs: 12},
		Window: &hsync.Window{Open: false, Next: at.Add(12 * time.Hour), ForcedUntil: at.Add(time.Minute)},
		Pods: []hsync.PodStatus{
			pod("api", &hsync.Rollout{State: hsync.RolloutRolledBack, Revision: rev, Hash: "v1:bad", Since: at, Reason: "container app keeps crashing (CrashLoopBackOff)"}),
			pod("cache", &hsync.Rollout{State: hsync.RolloutHeld, Since: at, Reason: "db migration", Hold: &hsync.Hold{By: "alice", Reason: "db migration", Since: at}}),
			pod("db", &hsync.Rollout{State: hsync.RolloutComplete, Revision: rev, Since: at}),
			pod("queue", nil),
			pod("web", &hsync.Rollout{State: hsync.RolloutProgressing, Revision: rev, Since: at, Reason: "container app: readiness probe not passing"}),
		},
	}
	var b bytes.Buffer
	if err := Status(&b, HostStatus{Host: "web-1", Alive: true, Doc: doc}); err != nil {
		t.Fatal(err)
	}
	want := `host web-1: alive; hostlet v1; reported 2026-12-05T14:00:00Z
last sync 2026-12-05T14:00:00Z (12 ms), error: none
maintenance window: closed, next opens 2026-12-06T02:00:00Z; forced until 2026-12-05T14:01:00Z

SOURCE  TYPE  REVISION  LAST SUCCESS  MANIFESTS  ERROR

POD    CONTAINER  PHASE    STATE    RESTARTS  REVISION      IMAGE   REASON
api    app        Running  running  0         3f2a9c1e4b5d  demo:1  -
cache  app        Running  running  0         3f2a9c1e4b5d  demo:1  -
db     app        Running  running  0         3f2a9c1e4b5d  demo:1  -
queue  app        Running  running  0         3f2a9c1e4b5d  demo:1  -
web    app        Running  running  0         3f2a9c1e4b5d  demo:1  -

rollouts:
  api: ROLLED BACK: container app keeps crashing (CrashLoopBackOff) (revision 3f2a9c1e4b5d)
  cache: HELD by alice since 2026-12-05T14:00:00Z: db migration
  web: progressing: container app: readiness probe not passing
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	for _, tc := range []struct {
		name string
		win  hsync.Window
		want string
	}{
		{"open", hsync.Window{Open: true, Next: at}, "open"},
		{"closed", hsync.Window{Next: at}, "closed, next opens 2026-12-05T14:00:00Z"},
		{"closed, none ahead", hsync.Window{}, "closed"},
		{"forced", hsync.Window{Next: at, ForcedUntil: at.Add(time.Minute)}, "closed, next opens 2026-12-05T14:00:00Z; forced until 2026-12-05T14:01:00Z"},
		{"open and forced", hsync.Window{Open: true, ForcedUntil: at}, "open; forced until 2026-12-05T14:00:00Z"},
	} {
		if got := windowText(tc.win); got != tc.want {
			t.Errorf("%s: windowText = %q, want %q", tc.name, got, tc.want)
		}
	}
	// Without windows: no window line; a hold without a reason.
	b.Reset()
	doc.Window = nil
	doc.Pods = []hsync.PodStatus{pod("web", &hsync.Rollout{State: hsync.RolloutHeld, Since: at, Hold: &hsync.Hold{By: "bob", Since: at}})}
	if err := Status(&b, HostStatus{Host: "web-1", Alive: true, Doc: doc}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "maintenance window") || !strings.Contains(out, "\n  web: HELD by bob since 2026-12-05T14:00:00Z\n") {
		t.Errorf("without windows, held without a reason:\n%s", out)
	}
}
