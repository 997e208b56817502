package agentrun_test

// hostlet leaves no goroutine behind: neither `hostlet run --once`
// (Options.Once) nor an agent stopped by cancelling its context, each with
// a pod whose liveness probe runs (a probe worker per container) and, for
// the agent, the engine's event stream and the HTTP API.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hsync "github.com/hostlet/hostlet/sync"
)

// probedPod is a pod of the test image whose container has an exec
// liveness probe run every second from the start.
func (e *env) probedPod(id string) string {
	return dockertest.PausePod(id, e.image, `livenessProbe:
  type: exec
  exec: {command: [/demo, probe-ok]}
  periodSeconds: 1`)
}

// verifyNoGoroutine fails t when a goroutine that was not running when
// ignore was taken is still running 10 s later (goleak's own retries last
// about half a second; a loaded machine may take longer to end a closed
// connection's goroutines). Nothing is ignored but what was running
// before: no goroutine of a library hostlet uses may outlive agent.Run
// either.
func verifyNoGoroutine(t *testing.T, ignore goleak.Option) {
	t.Helper()
	// The test's own keep-alive connections to the API (dockertest.HTTP
	// uses http.DefaultClient) are the test's, not hostlet's.
	http.DefaultClient.CloseIdleConnections()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		err := goleak.Find(ignore)
		return err == nil, fmt.Sprint(err)
	})
}

func TestOnceLeavesNoGoroutine(t *testing.T) {
	e := newEnv(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.probedPod("web"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local))
	opts := agenttest.Options(nil)
	opts.Once = true
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	ignore := goleak.IgnoreCurrent()
	if err := agent.Run(ctx, cfg, opts, dockertest.Logger(t)); err != nil {
		t.Fatalf("agent.Run with Once: %v", err)
	}
	verifyNoGoroutine(t, ignore)
	// The sync ran: the probed container runs (and so had its probe).
	if got := runningPods(e.containers(t)); len(got) != 1 || got[0] != "web" {
		t.Errorf("running pods %v after --once, want [web]", got)
	}
}

func TestStoppedAgentLeavesNoGoroutine(t *testing.T) {
	e := newEnv(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.probedPod("web"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local))

	ignore := goleak.IgnoreCurrent()
	a := agenttest.Start(t, cfg, nil)
	var running time.Time
	a.WaitStatus(t, time.Minute, func(doc api.Document) (bool, string) {
		for _, p := range doc.Pods {
			if p.ID == "web" && p.Phase == hsync.PhaseRunning {
				if running.IsZero() {
					running = time.Now()
				}
				// A sync that began after the pod was seen running has
				// started its probe worker.
				return syncedSince(doc, running), "pod web running; waiting for the next sync"
			}
		}
		return false, fmt.Sprintf("pod web not running: %+v", doc.Pods)
	})
	a.Stop()
	verifyNoGoroutine(t, ignore)
}
