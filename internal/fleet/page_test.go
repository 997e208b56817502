package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
)

var pageNow = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

// fleetEtcd is an etcd holding three hosts' reports as hostlets write
// them, two releases and web-2's events: web-1 at the latest release,
// web-2 behind it with a rolled back pod, db-1 silent (no liveness key).
func fleetEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	const old, latest = "1111111111111111111111111111111111111111", "3f2a9c1e4b5d60718293a4b5c6d7e8f901234567"
	status := func(labels, rev string, pods string) string {
		return fmt.Sprintf(`{"hostname": "h", "labels": %s, "time": "2026-12-05T13:59:50Z",
 "lastSync": {"start": "2026-12-05T13:59:55Z", "durationMs": 3, "error": ""},
 "sources": [{"name": "fleet", "type": "git", "revision": %q, "error": ""}],
 "pods": [%s], "rejected": []}`, labels, rev, pods)
	}
	put := func(k, v string) { etcdtest.Put(t, cli, k, v) }
	put("/hostlet/releases/"+old, `{"rev": "`+old+`", "time": "2026-12-04T10:00:00Z"}`)
	put("/hostlet/releases/"+latest, `{"rev": "`+latest+`", "time": "2026-12-05T13:50:00Z", "state": "Halted", "reason": "web-2 rolled back"}`)
	put("/hostlet/status/web-1", status(`{"role": "canary"}`, latest,
		`{"id": "shop", "phase": "Running", "rollout": {"state": "Complete"}}, {"id": "cache", "phase": "Running", "rollout": {"state": "Complete"}}`))
	put("/hostlet/status/web-2", status(`{"role": "web"}`, old,
		`{"id": "shop", "phase": "Running", "rollout": {"state": "RolledBack", "reason": "container app keeps crashing (CrashLoopBackOff)"}}, {"id": "cache", "phase": "Running"}`))
	put("/hostlet/status/db-1", status(`{"role": "db"}`, old, `{"id": "db", "phase": "Failed", "reason": "CrashLoopBackOff"}`))
	put("/hostlet/alive/web-1", "1")
	put("/hostlet/alive/web-2", "1")
	ev := func(seq int, typ, pod, reason string) {
		b, _ := json.Marshal(map[string]string{"time": pageNow.Add(time.Duration(seq-10) * time.Minute).Format(time.RFC3339), "type": typ, "pod": pod, "container": "", "reason": reason, "message": ""})
		put(fmt.Sprintf("/hostlet/events/web-2/2026-12-05T13:%02d:00Z-%d", 40+seq, seq), string(b))
	}
	ev(1, "create", "shop", "image shop:1 -> shop:2")
	ev(2, "restart", "shop", "exited (1)")
	ev(3, "rollback", "shop", "container app keeps crashing (CrashLoopBackOff)")
	return cli
}

func servePage(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	srv := httptest.NewServer(Handler(cli, "/hostlet", func() time.Time { return pageNow }, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestFleetPage: the page lists every host, those behind the latest
// release first, each expandable to its pods and recent events; it
// reloads itself, loads nothing from elsewhere, filters by selector, and
// escapes what hosts report.
func TestFleetPage(t *testing.T) {
	cli := fleetEtcd(t)
	// A host's report is not trusted: its text is escaped.
	etcdtest.Put(t, cli, "/hostlet/status/evil", `{"labels": {"role": "x"}, "pods": [{"id": "<script>alert(1)</script>", "phase": "Running"}], "sources": []}`)
	url := servePage(t, cli)
	code, body, h := get(t, url+"/")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("GET /: %d %v", code, h)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="10">`,
		"latest release <code>3f2a9c1e4b5d</code> (Halted: web-2 rolled back)",
		"<b>web-2</b>", "ROLLED BACK", "container app keeps crashing", "rollback",
		`<span class="dead">no</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "http://") && !strings.Contains(body, url) && strings.Contains(body, "src=\"http") {
		t.Errorf("page holds a script or an external asset")
	}
	if i, j := strings.Index(body, "<b>web-2</b>"), strings.Index(body, "<b>web-1</b>"); i < 0 || j < 0 || i > j {
		t.Errorf("web-2 (behind) is not listed before web-1")
	}
	_, filtered, _ := get(t, url+"/?selector=role=canary")
	if !strings.Contains(filtered, "<b>web-1</b>") || strings.Contains(filtered, "<b>web-2</b>") {
		t.Errorf("selector role=canary: page %s", filtered)
	}
	if code, _, _ := get(t, url+"/hosts/web-2"); code != 200 {
		t.Errorf("GET /hosts/web-2: %d", code)
	}
	if code, _, _ := get(t, url+"/hosts/nope"); code != 404 {
		t.Errorf("GET /hosts/nope: %d, want 404", code)
	}
}

// chromium is Debian's headless browser (make test installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: the fleet page is tested in a real headless browser (apt-get install -y chromium; make test installs it as root)")
	return ""
}

// browse runs headless Chromium on url with args (--dump-dom,
// --screenshot=FILE) and returns its standard output.
func browse(t *testing.T, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--window-size=1280,640"}
	cmd := exec.CommandContext(ctx, chromium(t), append(append(base, args...), url)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestFleetPageInBrowser: the page renders in a real headless Chromium
// (the DOM it builds holds the hosts and the expanded host's pods and
// events), and the screenshot docs/fleet.md shows is taken from it
// (written to docs/fleet.png with HOSTLET_UPDATE_DOCS=1).
func TestFleetPageInBrowser(t *testing.T) {
	url := servePage(t, fleetEtcd(t)) + "/?open=web-2"
	dom := browse(t, url, "--dump-dom")
	for _, want := range []string{"hostlet fleet", "web-1", "web-2", "db-1", "<details open=\"\">", "ROLLED BACK", "exited (1)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's DOM lacks %q", want)
		}
	}
	shot := filepath.Join(t.TempDir(), "fleet.png")
	if os.Getenv("HOSTLET_UPDATE_DOCS") != "" {
		shot, _ = filepath.Abs(filepath.Join("..", "..", "docs", "fleet.png"))
	}
	browse(t, url, "--screenshot="+shot)
	b, err := os.ReadFile(shot)
	if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, %v; want a PNG", shot, len(b), err)
	}
}
