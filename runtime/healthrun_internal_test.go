package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
)

// TestOneHangingHealthcheckHoldsUpNoOther: on a Podman without systemd
// (cgroupfs), hostlet runs the healthchecks; one that hangs (a
// manifest's timeout may be an hour) holds up no other container's: here
// "fast" (interval 1s) goes on being checked while "slow" hangs.
func TestOneHangingHealthcheckHoldsUpNoOther(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := apiPrefix.ReplaceAllString(r.URL.Path, "")
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case p == "/_ping":
			fmt.Fprint(w, "OK")
		case p == "/version":
			fmt.Fprint(w, `{"Version":"5.8.6","ApiVersion":"1.41","Components":[{"Name":"Podman Engine","Version":"5.8.6"}]}`)
		case p == "/info":
			fmt.Fprint(w, `{"Driver":"overlay","CgroupDriver":"cgroupfs"}`)
		case p == "/containers/json":
			fmt.Fprint(w, `[{"Id":"slow","Names":["/hostlet_a"],"State":"running","Labels":{}},{"Id":"fast","Names":["/hostlet_b"],"State":"running","Labels":{}}]`)
		case strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/json"):
			id := strings.Split(p, "/")[2]
			hc := map[string]any{"Test": []string{"CMD", "x"}, "Interval": int64(time.Second), "Timeout": int64(time.Second)}
			if id == "slow" {
				hc["Timeout"] = int64(time.Hour)
			}
			json.NewEncoder(w).Encode(map[string]any{"Id": id, "Config": map[string]any{"Healthcheck": hc}, "State": map[string]any{"Running": true}})
		case strings.HasPrefix(p, "/libpod/containers/") || strings.Contains(r.URL.Path, "/libpod/containers/"):
			id := strings.Split(strings.SplitN(r.URL.Path, "/libpod/containers/", 2)[1], "/")[0]
			mu.Lock()
			calls[id]++
			mu.Unlock()
			if id == "slow" {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			fmt.Fprint(w, `{"Status":"healthy"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release)
	d, err := New(t.Context(), "tcp://"+srv.Listener.Addr().String(), "health", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.stopHealthchecks == nil {
		t.Fatal("no healthcheck runner started")
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return calls["slow"] == 1 && calls["fast"] >= 4, fmt.Sprintf("healthcheck runs %v: want slow's one run hanging and fast's going on", calls)
	})
}
