package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
)

var heldAt = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

const heldRev = "3f2a9c1e4b5d60718293a4b5c6d7e8f901234567"

// holdsFixture is a host with three pods in a file source (api, cache,
// web), none running, and the PodHash of each as the host would hash it.
type holdsFixture struct {
	dir, stateDir, config string
	hashes                map[string]string
}

func newHoldsFixture(t *testing.T, instance, listen string) *holdsFixture {
	t.Helper()
	dir := t.TempDir()
	for _, id := range []string{"api", "cache", "web"} {
		writeFile(t, dir, "manifests/"+id+".yaml", dockertest.PausePod(id, "example.org/"+id+":2", ""))
	}
	f := &holdsFixture{dir: dir, stateDir: filepath.Join(dir, "state")}
	f.config = writeFile(t, dir, "hostlet.yaml", fmt.Sprintf("hostname: web-1\ninstance: %s\nstateDir: %s\nlisten: %q\nsources:\n  - {name: local, type: file, path: %s}\n",
		instance, f.stateDir, listen, filepath.Join(dir, "manifests")))
	// The desired pods as diff (and the agent) make them.
	cfg, err := config.Load(f.config)
	if err != nil {
		t.Fatal(err)
	}
	srcs, closeSources, err := hostplan.OpenSources(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSources()
	f.hashes = map[string]string{}
	for _, p := range hostplan.Desired(hostplan.ReadSources(t.Context(), srcs), configured.ValidateOptions(cfg)) {
		f.hashes[p.Manifest.ID] = manifest.PodHash(p.Manifest)
	}
	if len(f.hashes) != 3 {
		t.Fatalf("desired pods %v, want api, cache, web", f.hashes)
	}
	return f
}

// holds is a holds.json as hostlet saves it: web held.
const holdsJSON = `{"pods": {"web": {"by": "alice", "reason": "db migration", "since": "2026-12-05T14:00:00Z"}}}`

// rollouts is the content of a rollouts.json as hostlet saves it
// (sync/rolloutstore.go, without the kept "good" versions; writeSealed
// seals it): api's desired version rolled back, cache's older version
// rolled back.
func (f *holdsFixture) rollouts() string {
	return fmt.Sprintf(`{"pods": {
  "web": {"rollout": {"state": "Complete", "since": "2026-12-01T10:00:00Z"}},
  "api": {"rollout": {"state": "RolledBack", "revision": %[1]q, "hash": %[2]q, "since": "2026-12-05T13:00:00Z", "reason": "container app keeps crashing (CrashLoopBackOff)"},
          "bad": {"hash": %[2]q, "revision": %[1]q, "reason": "container app keeps crashing (CrashLoopBackOff)", "at": "2026-12-05T13:00:00Z"}},
  "cache": {"rollout": {"state": "RolledBack", "revision": %[1]q, "hash": "v1:older", "since": "2026-12-05T12:00:00Z", "reason": "not ready within 300s"},
          "bad": {"hash": "v1:older", "revision": %[1]q, "reason": "not ready within 300s", "at": "2026-12-05T12:00:00Z"}}
}}`, heldRev, f.hashes["api"])
}

// TestDiffAgainstLiveHolds: diff --against live reads the rollouts the
// host saved under stateDir: api's desired version is held back, web is
// held, cache (its rolled back version is not the desired one) is
// created. A damaged rollouts file is a warning, and diff goes on
// without it; no stateDir is no rollouts, silently.
func TestDiffAgainstLiveHolds(t *testing.T) {
	f := newHoldsFixture(t, dockertest.Instance(t), "")
	// write seals content as the host's hostlet does (with the key in
	// its stateDir); writeRaw writes it as it is.
	writeRaw := func(content string) {
		t.Helper()
		writeFile(t, f.stateDir, hsync.RolloutsFile, content)
	}
	write := func(content string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(f.stateDir, hsync.EnvKeyFile)); err != nil {
			if _, err := atomicfile.NewKey(filepath.Join(f.stateDir, hsync.EnvKeyFile)); err != nil {
				t.Fatal(err)
			}
		}
		sl, err := hsync.ReadStateSealer(f.stateDir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sl.Seal([]byte(content), hsync.RolloutsFile)
		if err != nil {
			t.Fatal(err)
		}
		writeRaw(string(b))
		writeFile(t, f.stateDir, hsync.HoldsFile, holdsJSON)
	}

	// No stateDir at all.
	r := runCLI(t, "diff", "--config", f.config)
	if r.code != 2 || r.stderr != "" || !strings.HasSuffix(r.stdout, "Plan: 3 to create, 0 to recreate, 0 to remove, 0 unchanged, 0 rejected.\n") {
		t.Errorf("no stateDir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	write(f.rollouts())
	r = runCLI(t, "diff", "--config", f.config)
	rev := r.stdout[strings.Index(r.stdout, "@ ")+2:]
	rev = rev[:strings.Index(rev, ")")]
	want := strings.ReplaceAll(`~ pod api (local @ REV): held back: rolled back at 3f2a9c1e4b5d: container app keeps crashing (CrashLoopBackOff)
+ pod cache (local @ REV)
  + app  create
pod web (local @ REV): held by alice: db migration; waiting:
  + app  create
Plan: 1 to create, 0 to recreate, 0 to remove, 0 unchanged, 0 rejected, 1 held back, 1 held.
`, "REV", rev)
	if r.code != 2 || r.stdout != want || r.stderr != "" {
		t.Errorf("exit %d, want 2\n--- got:\n%s%s--- want:\n%s", r.code, r.stdout, r.stderr, want)
	}

	// JSON: the same, with held and heldBack.
	r = runCLI(t, "diff", "--config", f.config, "-o", "json")
	var rep diffReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Hosts) != 1 {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	hp := rep.Hosts[0]
	got := map[string]string{}
	for _, p := range hp.Pods {
		switch {
		case p.HeldBack != nil:
			got[p.ID] = "held back at " + p.HeldBack.Revision + ": " + p.HeldBack.Reason
		case p.Held != nil:
			got[p.ID] = "held by " + p.Held.By + " since " + p.Held.Since.Format(time.RFC3339) + ": " + p.Held.Reason
		default:
			got[p.ID] = p.Action
		}
	}
	wantPods := map[string]string{
		"api":   "held back at " + heldRev + ": container app keeps crashing (CrashLoopBackOff)",
		"cache": "create",
		"web":   "held by alice since 2026-12-05T14:00:00Z: db migration",
	}
	if fmt.Sprint(got) != fmt.Sprint(wantPods) || hp.Summary != (hostplan.Summary{Create: 1, HeldBack: 1, Held: 1}) {
		t.Errorf("JSON pods %v summary %+v\nwant %v", got, hp.Summary, wantPods)
	}

	// Only held and held back changes: no changes, exit 0.
	if err := os.Remove(filepath.Join(f.dir, "manifests", "cache.yaml")); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "diff", "--config", f.config)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "Plan: 0 to create, 0 to recreate, 0 to remove, 0 unchanged, 0 rejected, 1 held back, 1 held.\n") {
		t.Errorf("only held changes: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A damaged file: a warning, and the plan without rollouts.
	writeRaw("hostlet-sealed-v1\n" + "cut short")
	writeFile(t, f.stateDir, hsync.HoldsFile, `{"pods": {"web": null}}`)
	r = runCLI(t, "diff", "--config", f.config)
	t.Logf("damaged rollouts:\n%s%s", r.stdout, r.stderr)
	if r.code != 2 || !strings.Contains(r.stderr, "hostlet: warning: host web-1: ") || !strings.Contains(r.stderr, "held and held back pods show as changes") ||
		!strings.HasSuffix(r.stdout, "Plan: 2 to create, 0 to recreate, 0 to remove, 0 unchanged, 0 rejected.\n") {
		t.Errorf("damaged rollouts: exit %d, want 2 and a warning\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A file hostlet did not seal (written by hand, forged) is damage too.
	writeRaw(f.rollouts())
	writeFile(t, f.stateDir, hsync.HoldsFile, holdsJSON)
	if r = runCLI(t, "diff", "--config", f.config); r.code != 2 || !strings.Contains(r.stderr, "warning") {
		t.Errorf("unsealed rollouts: exit %d, want 2 and a warning\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDiffAgainstStatusHolds: diff --against status reads the holds and
// rollbacks from the pods' rollout in the status document.
func TestDiffAgainstStatusHolds(t *testing.T) {
	var f *holdsFixture
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc := api.Document{Hostname: "web-1", Pods: []hsync.PodStatus{
			{ID: "api", Source: "local", Phase: hsync.PhaseRunning, Rollout: &hsync.Rollout{State: hsync.RolloutRolledBack, Revision: heldRev, Hash: f.hashes["api"], Since: heldAt, Reason: "not ready within 300s"}},
			{ID: "cache", Source: "local", Phase: hsync.PhaseRunning, Rollout: &hsync.Rollout{State: hsync.RolloutComplete, Since: heldAt}},
			{ID: "web", Source: "local", Phase: hsync.PhaseRunning, Rollout: &hsync.Rollout{State: hsync.RolloutHeld, Since: heldAt, Reason: "db migration", Hold: &hsync.Hold{By: "alice", Reason: "db migration", Since: heldAt}}},
		}}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer ts.Close()
	f = newHoldsFixture(t, "status-holds", ts.Listener.Addr().String())
	r := runCLI(t, "diff", "--config", f.config, "--against", "status")
	for _, want := range []string{
		"~ pod api (local @ ",
		"): held back: rolled back at 3f2a9c1e4b5d: not ready within 300s\n+ pod cache (local @ ",
		"pod web (local @ ",
		"): held by alice: db migration; waiting:\n  + app  create\n",
		"Plan: 1 to create, 0 to recreate, 0 to remove, 0 unchanged, 0 rejected, 1 held back, 1 held.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if r.code != 2 || t.Failed() {
		t.Errorf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
}
