package sync_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	hsync "github.com/hostlet/hostlet/sync"
)

// hangingRegistry serves a registry on 127.0.0.1 (the engine pulls from it
// over plain HTTP: a loopback registry is insecure by default) that answers
// the engine's /v2/ probe and then hangs on every other request until the
// test ends. It returns the registry's host:port and the number of requests
// left hanging so far.
func hangingRegistry(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var hanging atomic.Int32
	stop := make(chan struct{})
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" {
				w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
				w.WriteHeader(http.StatusOK)
				return
			}
			hanging.Add(1)
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		close(stop)
		if err := srv.Close(); err != nil {
			t.Errorf("close the hanging registry: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("hanging registry: %v", err)
		}
	})
	return ln.Addr().String(), &hanging
}

// Finding 8 on the engine: a pod whose registry hangs waits Pending/Pulling
// while a new pod, declared after it, is created and runs. The sync loop
// is never held up by the pull.
func TestHangingRegistryDoesNotDelayOtherPods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg, hanging := hangingRegistry(t)
	e.run() // its clean-up (stop the loop, cancel and join the pull) runs before the registry's
	img := reg + "/hostlet-test/" + strings.ToLower(e.inst) + ":1"
	slow := e.pod(singlePod, "slow", img, "slow", testkit.FreePort(t))
	e.set(slow)
	p := e.waitPhase("slow", hsync.PhasePending, hsync.ReasonPulling, 30*time.Second)
	if !strings.Contains(p.Message, img) {
		t.Errorf("slow: message %q does not name the image", p.Message)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		return hanging.Load() > 0, "the engine's pull has not reached the registry"
	})

	portFast := testkit.FreePort(t)
	start := time.Now()
	e.set(slow, e.pod(singlePod, "fast", e.img, "fast", portFast))
	e.waitPhase("fast", hsync.PhaseRunning, "", 30*time.Second)
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", portFast), "", "MESSAGE=fast")
	t.Logf("pod fast answered %s after it was declared, while the registry hangs", time.Since(start).Round(time.Millisecond))

	if p := e.mustStatus("slow"); p.Phase != hsync.PhasePending || p.Reason != hsync.ReasonPulling {
		t.Errorf("slow while its registry hangs: phase %s reason %q message %q, want Pending Pulling", p.Phase, p.Reason, p.Message)
	}
	if _, ok := e.containers()["slow/app"]; ok {
		t.Error("slow has a container before its image was pulled")
	}
}
