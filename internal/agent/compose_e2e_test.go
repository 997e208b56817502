package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/composetest"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest/compose"
)

// TestComposeProject runs a Compose project from a file source on the real
// engine: its service is a pod with Compose's labels, interpolated from
// .env and the host's compose.env; a new revision using a key hostlet does
// not apply is rejected by name and the running version stays; removing
// the project removes its containers and leaves the native pod beside it.
func TestComposeProject(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "native.yaml"), e.pod("native", "1"))
	project := filepath.Join(tree, "shop")
	composeFile := func(extra string) string {
		return fmt.Sprintf(`services:
  web:
    image: %s
    pull_policy: never
    restart: unless-stopped
    stop_grace_period: 1s
    environment:
      MESSAGE: "${GREETING} from ${PLACE:-nowhere}"
    ports: ["127.0.0.1:%d:8080"]
%s`, e.image, port, extra)
	}
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), composeFile(""))
	testkit.WriteFile(t, filepath.Join(project, ".env"), "GREETING=hello\nPLACE=dotenv\n")
	cfg := e.config(t, fmt.Sprintf("compose:\n  env: {PLACE: host-config}\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	before := e.waitPods(t, 60*time.Second, "native", "shop-web")
	web := before[1]
	for k, want := range map[string]string{compose.LabelProject: "shop", compose.LabelService: "web", compose.LabelContainerNumber: "1", compose.LabelOneoff: "False"} {
		if got := web.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		code, body, err := testkit.HTTP("GET", url, "")
		return err == nil && code == 200 && strings.Contains(body, "MESSAGE=hello from host-config"), fmt.Sprintf("GET %s: %d %q %v", url, code, body, err)
	})

	// A revision with a key hostlet does not apply: rejected by name, the
	// running container stays.
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), composeFile("    privileged: true\n"))
	seen := time.Now()
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, r := range d.Rejected {
			if r.ID == "shop-web" && strings.Contains(strings.Join(r.Reasons, ";"), "/shop/compose.yaml: services.web.privileged: not supported by hostlet yet") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("rejected %+v", d.Rejected)
	})
	t.Logf("rejected: %+v", doc.Rejected)
	a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, seen.Add(1500*time.Millisecond)), fmt.Sprintf("last sync started %s", d.LastSync.Start)
	})
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("containers changed after a rejected revision:\nbefore %+v\nafter  %+v", before, after)
	}

	// The project removed: its containers go, the native pod stays.
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	e.waitPods(t, 60*time.Second, "native")
}
