package agentrun_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// rawHooks is a webhook target keeping every body as it came.
type rawHooks struct {
	mu     gosync.Mutex
	bodies []string
}

func (h *rawHooks) ServeHTTP(_ http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

func (h *rawHooks) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.bodies, "\n")
}

// TestInterpolatedValuesNeverInStatusEventsOrNotifications: values from a
// project's .env and the host's compose.env that land in keys hostlet
// rejects (a pod's stop_signal, cap_add, working_dir, dns; a project's
// volume driver, which fails the whole source) are in no /status
// rejection or source error, no /events entry, no webhook body and no log
// line; each error still names the file and key.
func TestInterpolatedValuesNeverInStatusEventsOrNotifications(t *testing.T) {
	e := newEnv(t)
	hooks := &rawHooks{}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	secrets := []string{"SIGhunter2pw", "HOST_SECRET_CAP", "w7", "hunter2.dns.example", "hunter2-volume-driver"}

	rejected := filepath.Join(e.dir, "rejected")
	testkit.WriteFile(t, filepath.Join(rejected, "shop", ".env"), "SIG=SIGhunter2pw\nWD=w7\nDNS=hunter2.dns.example\n")
	testkit.WriteFile(t, filepath.Join(rejected, "shop", "compose.yaml"), fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    pull_policy: never
    stop_signal: ${SIG}
    cap_add: ["${HOSTCAP}"]
    working_dir: ${WD}
    dns: ["${DNS}"]
`, e.instance, e.image))
	broken := filepath.Join(e.dir, "broken")
	testkit.WriteFile(t, filepath.Join(broken, "store", ".env"), "VD=hunter2-volume-driver\n")
	testkit.WriteFile(t, filepath.Join(broken, "store", "compose.yaml"), fmt.Sprintf(`name: %s-store
services:
  db:
    image: %s
    volumes: ["data:/data"]
volumes:
  data: {driver: "${VD}"}
`, e.instance, e.image))
	cfg := e.config(t, fmt.Sprintf(`compose:
  env: {HOSTCAP: HOST_SECRET_CAP}
  helper: %s
sources:
  - {name: rejected, type: file, path: %s, interval: 1s}
  - {name: broken, type: file, path: %s, interval: 1s}
notify:
  - {url: %q, events: [rejected, source-error]}
`, composetest.Helper(t), rejected, broken, srv.URL+"/hook"))
	logs := &testkit.LogBuffer{}
	a := agenttest.Start(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		ok, errText, _ := sourceStatus(d, "broken")
		return len(d.Rejected) == 1 && ok && errText != "", fmt.Sprintf("rejected %+v, source broken error %q", d.Rejected, errText)
	})
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		body := hooks.all()
		return strings.Contains(body, `"rejected"`) && strings.Contains(body, `"source-error"`), "webhook bodies:\n" + body
	})
	_, status, err := testkit.HTTP(http.MethodGet, a.URL("/status"), "")
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := testkit.HTTP(http.MethodGet, a.URL("/events"), "")
	if err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"/status": status, "/events": events, "webhook bodies": hooks.all(), "logs": logs.String()} {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s show the interpolated value %q:\n%s", what, s, out)
			}
		}
	}
	for _, want := range []string{"services.web.stop_signal", "services.web.cap_add[0]", "services.web.working_dir", "services.web.dns[0]", "volumes.data.driver", "shop/compose.yaml", "store/compose.yaml"} {
		if !strings.Contains(status, want) || !strings.Contains(events, want) {
			t.Errorf("/status or /events do not name %s:\n%s\n%s", want, status, events)
		}
	}
}
