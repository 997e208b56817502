package agentrun_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// webPod is pod web serving the demo server on host port port: version
// v (a label), extra lines for the container (env, healthcheck) and for
// the pod (its update settings).
func (e *env) webPod(port int, v, podExtra, containerExtra string) string {
	return fmt.Sprintf(`version: v1beta1
id: web
labels: {v: %q}
terminationGracePeriodSeconds: 1
%scontainers:
  - name: app
    image: %s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
%s`, v, podExtra, e.image, port, containerExtra)
}

// rollout is pod id's rollout in doc (nil when none).
func rollout(doc api.Document, id string) *hsync.Rollout {
	for _, p := range doc.Pods {
		if p.ID == id {
			return p.Rollout
		}
	}
	return nil
}

func podStatus(doc api.Document, id string) hsync.PodStatus {
	for _, p := range doc.Pods {
		if p.ID == id {
			return p
		}
	}
	return hsync.PodStatus{}
}

// waitRollout waits until pod id's rollout is in state for the revision
// given ("" for any) and returns the status document.
func waitRollout(t *testing.T, a *agenttest.Agent, timeout time.Duration, id, state, revision string) api.Document {
	t.Helper()
	return a.WaitStatus(t, timeout, func(d api.Document) (bool, string) {
		r := rollout(d, id)
		if r == nil {
			return false, "no rollout yet"
		}
		return r.State == state && (revision == "" || r.Revision == revision), fmt.Sprintf("rollout %+v, want %s at %q", *r, state, revision)
	})
}

// app is pod id's app container.
func (e *env) app(t *testing.T, id string) box {
	t.Helper()
	for _, b := range e.containers(t) {
		if b.Pod == id && b.Labels[hruntime.LabelContainer] == "app" {
			return b
		}
	}
	return box{}
}

// waitSyncs waits until n syncs have started after now.
func waitSyncs(t *testing.T, a *agenttest.Agent, n int) {
	t.Helper()
	for range n {
		since := time.Now()
		a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
			return syncedSince(d, since), fmt.Sprintf("last sync %s", d.LastSync.Start)
		})
	}
}

// hookReceiver is a webhook target counting what it receives by event.
type hookReceiver struct {
	mu     gosync.Mutex
	bodies []map[string]string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	h.mu.Lock()
	h.bodies = append(h.bodies, m)
	h.mu.Unlock()
}

func (h *hookReceiver) received(event string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, b := range h.bodies {
		if b["event"] == event {
			out = append(out, b)
		}
	}
	return out
}

// TestRollbackOnCrash: a commit whose new version crashes is rolled back
// to the previous container spec, which answers again; the status says
// RolledBack with the reason; the bad version is not retried for minutes
// of syncs, nor after a restart of hostlet; a later good commit is
// applied. A webhook receiver gets exactly one rollback notification.
func TestRollbackOnCrash(t *testing.T) {
	e := newEnv(t)
	hooks := &hookReceiver{}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	port := testkit.FreePort(t)
	local := filepath.Join(e.dir, "local")
	const settings = "minReadySeconds: 2\nprogressDeadlineSeconds: 120\n"
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "1", settings, ""))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\nnotify:\n  - {url: %q, events: [rollback]}\n", local, srv.URL+"/hook"))
	a := e.start(t, cfg)
	goodPod := rollout(waitRollout(t, a, 90*time.Second, "web", hsync.RolloutComplete, ""), "web").Hash
	good := e.app(t, "web").Labels[hruntime.LabelHash]
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")

	// The bad commit: the server exits 300 ms after it starts.
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "2", settings, "    env: [{name: EXIT_AFTER, value: 300ms}]\n"))
	doc := waitRollout(t, a, 90*time.Second, "web", hsync.RolloutRolledBack, "")
	r := rollout(doc, "web")
	if !strings.Contains(r.Reason, "keeps crashing") || r.PreviousHash != goodPod || r.Hash == r.PreviousHash {
		t.Fatalf("rolled back: %+v, want the crash loop as the reason and both hashes", *r)
	}
	var restored box
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		restored = e.app(t, "web")
		return restored.Labels[hruntime.LabelHash] == good && restored.State == "running", fmt.Sprintf("web: hash %s %s, want %s running", restored.Labels[hruntime.LabelHash], restored.State, good)
	})
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")
	if v, ok := metricValue(scrape(t, a.Addr), "hostlet_rollbacks_total", map[string]string{"pod": "web"}); !ok || v != 1 {
		t.Errorf("hostlet_rollbacks_total{pod=web} = %v (%v), want 1", v, ok)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := len(hooks.received("rollback"))
		return n >= 1, fmt.Sprintf("%d rollback notifications", n)
	})

	// No retry: syncs go on (past the 10, 20 and 40 s a backoff would
	// wait), the restored container stays.
	a.WaitStatus(t, 150*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, r.Since.Add(75*time.Second)), fmt.Sprintf("last sync %s, rolled back %s", d.LastSync.Start, r.Since)
	})
	if c := e.app(t, "web"); c.ID != restored.ID || c.StartedAt != restored.StartedAt {
		t.Fatalf("web changed after the rollback: %+v, want %+v", c, restored)
	}
	a.Stop()
	b := e.start(t, cfg)
	waitSyncs(t, b, 5)
	waitRollout(t, b, 30*time.Second, "web", hsync.RolloutRolledBack, "")
	if c := e.app(t, "web"); c.ID != restored.ID || c.StartedAt != restored.StartedAt {
		t.Fatalf("web changed after a restart of hostlet: %+v, want %+v", c, restored)
	}
	for _, ev := range getEvents(t, b.Addr) {
		if ev.Pod == "web" && ev.Type == eventlog.Create {
			t.Fatalf("the restarted hostlet created web again: %+v", ev)
		}
	}

	// A later good commit is applied.
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "3", settings, ""))
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		r := rollout(b.WaitStatus(t, 10*time.Second, func(api.Document) (bool, string) { return true, "" }), "web")
		return r != nil && r.State == hsync.RolloutComplete && r.PreviousHash == goodPod, fmt.Sprintf("rollout %+v", r)
	})
	if c := e.app(t, "web"); c.Labels["v"] != "3" {
		t.Fatalf("web runs version %q, want 3", c.Labels["v"])
	}
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")
	if n := len(hooks.received("rollback")); n != 1 {
		t.Fatalf("%d rollback notifications, want exactly 1: %+v", n, hooks.received("rollback"))
	}
	if got := hooks.received("rollback")[0]; got["pod"] != "web" || got["host"] != "test-host" || !strings.Contains(got["reason"], "keeps crashing") {
		t.Fatalf("rollback notification %+v, want host, pod and reason", got)
	}
}

// getEvents reads /events.
func getEvents(t *testing.T, addr string) []eventlog.Event {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []eventlog.Event
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRollbackUnhealthyAtDeadline: a new version whose healthcheck never
// passes is rolled back once its progress deadline passes; with rollback:
// Never it is left failing.
func TestRollbackUnhealthyAtDeadline(t *testing.T) {
	e := newEnv(t)
	port := testkit.FreePort(t)
	local := filepath.Join(e.dir, "local")
	const healthy = "    healthcheck: {command: [/demo, probe-ok], intervalSeconds: 1}\n"
	// Failures in the start period do not count: the check stays
	// "starting", never healthy, never unhealthy.
	const neverHealthy = "    healthcheck: {command: [/demo, probe-fail], intervalSeconds: 1, startPeriodSeconds: 3600}\n"
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "1", "minReadySeconds: 1\nprogressDeadlineSeconds: 5\n", healthy))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local))
	a := e.start(t, cfg)
	waitRollout(t, a, 90*time.Second, "web", hsync.RolloutComplete, "")
	good := e.app(t, "web").Labels[hruntime.LabelHash]

	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "2", "minReadySeconds: 1\nprogressDeadlineSeconds: 5\n", neverHealthy))
	doc := waitRollout(t, a, 90*time.Second, "web", hsync.RolloutRolledBack, "")
	if r := rollout(doc, "web"); !strings.Contains(r.Reason, "not ready within progressDeadlineSeconds (5s)") || !strings.Contains(r.Reason, "healthcheck starting") {
		t.Fatalf("rolled back: %+v, want the deadline and the healthcheck as the reason", *r)
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		c := e.app(t, "web")
		return c.Labels[hruntime.LabelHash] == good && c.State == "running", fmt.Sprintf("web %s %s, want %s", c.Labels[hruntime.LabelHash], c.State, good)
	})

	// rollback: Never leaves the new version as it is, failing.
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "3", "minReadySeconds: 1\nprogressDeadlineSeconds: 5\nrollback: Never\n", neverHealthy))
	a.WaitStatus(t, 90*time.Second, func(d api.Document) (bool, string) {
		r := rollout(d, "web")
		return r != nil && r.State == hsync.RolloutProgressing && strings.Contains(r.Reason, "(rollback: Never)"), fmt.Sprintf("rollout %+v", r)
	})
	waitSyncs(t, a, 3)
	if c := e.app(t, "web"); c.Labels["v"] != "3" {
		t.Fatalf("web runs version %q, want 3 left as it is", c.Labels["v"])
	}
}

// hold sends POST (or DELETE) /pods/{id}/hold with the token.
func hold(t *testing.T, addr, token, method, id, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/pods/"+id+"/hold", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHoldKeepsContainer: a held pod keeps its container (same ID and
// start) through a manifest change and after being stopped by hand, also
// across a restart of hostlet; on release it converges.
func TestHoldKeepsContainer(t *testing.T) {
	e := newEnv(t)
	tf, token := tokenFile(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: local, type: file, path: %s}\n", tf, local))
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "web")
	before := e.app(t, "web")
	if code, body := hold(t, a.Addr, token, http.MethodPost, "web", `{"by": "alice", "reason": "debugging a leak"}`); code != http.StatusOK {
		t.Fatalf("hold: %d %s", code, body)
	}
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "2"))
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		st := podStatus(d, "web")
		return st.Reason == hsync.ReasonHeld && strings.Contains(st.Message, "app recreate"), fmt.Sprintf("web %s %q", st.Reason, st.Message)
	})
	if r := rollout(doc, "web"); r == nil || r.State != hsync.RolloutHeld || r.Hold == nil || r.Hold.By != "alice" || r.Hold.Reason != "debugging a leak" {
		t.Fatalf("held pod's rollout %+v, want Held by alice with the reason", r)
	}
	waitSyncs(t, a, 3)
	if c := e.app(t, "web"); c.ID != before.ID || c.StartedAt != before.StartedAt {
		t.Fatalf("held pod changed: %+v, want %+v", c, before)
	}
	// Stopped by hand: left stopped, also by a restarted hostlet.
	stopSeconds := 1
	if err := e.docker.ContainerStop(t.Context(), before.ID, container.StopOptions{Timeout: &stopSeconds}); err != nil {
		t.Fatal(err)
	}
	waitSyncs(t, a, 3)
	a.Stop()
	b := e.start(t, cfg)
	waitSyncs(t, b, 3)
	waitRollout(t, b, 10*time.Second, "web", hsync.RolloutHeld, "")
	if c := e.app(t, "web"); c.ID != before.ID || c.State != "exited" {
		t.Fatalf("held pod after a stop by hand and a restart: %+v, want %s exited", c, before.ID)
	}
	if code, body := hold(t, b.Addr, token, http.MethodDelete, "web", ""); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		c := e.app(t, "web")
		return c.Labels["v"] == "2" && c.State == "running", fmt.Sprintf("web: version %q %s", c.Labels["v"], c.State)
	})
	if code, _ := hold(t, b.Addr, token, http.MethodDelete, "web", ""); code != http.StatusNotFound {
		t.Fatalf("a second release: %d, want 404", code)
	}
}

// TestWindowDefersRecreate: outside the maintenance window a recreate
// waits while a new pod starts at once; a forced sync applies it.
func TestWindowDefersRecreate(t *testing.T) {
	e := newEnv(t)
	tf, token := tokenFile(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
	// A window three days from today: closed now.
	day := time.Now().UTC().AddDate(0, 0, 3).Weekday().String()[:3]
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: local, type: file, path: %s}\n", tf, local))
	cfg.Sync.Windows, cfg.Sync.Timezone = []string{day + " 03:00-04:00"}, "UTC"
	a := e.start(t, cfg)
	// A new pod starts at once, window or not.
	e.waitPods(t, 60*time.Second, "web")
	before := e.app(t, "web")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "2"))
	testkit.WriteFile(t, filepath.Join(local, "api.yaml"), e.pod("api", "1"))
	e.waitPods(t, 60*time.Second, "api", "web")
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		st := podStatus(d, "web")
		return st.Reason == hsync.ReasonWindow, fmt.Sprintf("web %s %q", st.Reason, st.Message)
	})
	if doc.Window == nil || doc.Window.Open || doc.Window.Next.IsZero() {
		t.Fatalf("window %+v, want closed with the next opening", doc.Window)
	}
	waitSyncs(t, a, 3)
	if c := e.app(t, "web"); c.ID != before.ID || c.StartedAt != before.StartedAt {
		t.Fatalf("web changed in a closed window: %+v, want %+v", c, before)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+a.Addr+"/sync?force=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /sync?force=1: %d", resp.StatusCode)
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		c := e.app(t, "web")
		return c.Labels["v"] == "2" && c.State == "running", fmt.Sprintf("web: version %q %s", c.Labels["v"], c.State)
	})
}

// TestNotifyReceiverDownDoesNotSlowSyncs: a notification target that
// hangs on every request holds up nothing: syncs go on and a new pod is
// created while its notifications wait.
func TestNotifyReceiverDownDoesNotSlowSyncs(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		hung.Close()
	})
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\nnotify:\n  - {url: %q}\n", local, hung.URL))
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "web")
	// Rejections, each a notification the target never takes.
	for i := range 20 {
		testkit.WriteFile(t, filepath.Join(local, "bad.yaml"), fmt.Sprintf("version: v1beta1\nid: bad\ncontainers: []\n# %d\n", i))
		since := time.Now()
		a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
			return syncedSince(d, since) && len(d.Rejected) == 1, fmt.Sprintf("last sync %s, rejected %v", d.LastSync.Start, d.Rejected)
		})
	}
	testkit.WriteFile(t, filepath.Join(local, "api.yaml"), e.pod("api", "1"))
	e.waitPods(t, 60*time.Second, "api", "web")
}

// TestRollbackReadinessProbeAtDeadline: a new version whose exec
// readiness probe never passes is rolled back at its deadline.
func TestRollbackReadinessProbeAtDeadline(t *testing.T) {
	e := newEnv(t)
	port := testkit.FreePort(t)
	local := filepath.Join(e.dir, "local")
	const settings = "minReadySeconds: 1\nprogressDeadlineSeconds: 4\n"
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "1", settings, "    readinessProbe: {type: exec, exec: {command: [/demo, probe-ok]}, periodSeconds: 1}\n"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local))
	a := e.start(t, cfg)
	waitRollout(t, a, 90*time.Second, "web", hsync.RolloutComplete, "")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.webPod(port, "2", settings, "    readinessProbe: {type: exec, exec: {command: [/demo, probe-fail]}, periodSeconds: 1}\n"))
	doc := waitRollout(t, a, 90*time.Second, "web", hsync.RolloutRolledBack, "")
	if r := rollout(doc, "web"); !strings.Contains(r.Reason, "readiness probe not passing") {
		t.Fatalf("rolled back: %+v, want the readiness probe as the reason", *r)
	}
}
