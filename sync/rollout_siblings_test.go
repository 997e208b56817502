package sync_test

import (
	"fmt"
	"testing"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestRolloutIgnoresOldRestartsOfASiblingItLeft: a sidecar the engine
// restarted 3 times over its life (an hour apart, never a crash loop) is
// not a crash loop of a later rollout that changes only the other
// container: the engine's restart count of a container the rollout did
// not make holds restarts from before it.
func TestRolloutIgnoresOldRestartsOfASiblingItLeft(t *testing.T) {
	e := newRolloutEnv(t, nil)
	pod := func(rev, image string) hsync.Pod {
		p := decodePod(e.t, fmt.Sprintf(`
version: v1beta1
id: web
minReadySeconds: 10
progressDeadlineSeconds: 60
rollback: Auto
restartPolicy: Always
containers:
  - name: app
    image: "%s"
  - name: side
    image: "example.org/side:1"
`, image))
		p.Revision = rev
		return p
	}
	e.set(pod("r1", "example.org/app:1"))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	side := func() hruntime.Container {
		cs, _ := e.fake.List(e.ctx)
		for _, c := range cs {
			if c.Pod() == "web" && c.Slot() == "side" {
				return c
			}
		}
		return hruntime.Container{}
	}
	// Three crashes of side, an hour apart: no crash loop.
	for range 3 {
		if err := e.fake.Exit(side().ID, 1); err != nil {
			t.Fatal(err)
		}
		e.feed()
		e.sync(time.Hour)
	}
	if st := e.status("web"); st.Phase != hsync.PhaseRunning {
		t.Fatalf("web %s %s %s", st.Phase, st.Reason, st.Message)
	}
	t.Logf("side restarts=%d", e.status("web").Containers[1].Restarts)
	// Update only app.
	e.set(pod("r2", "example.org/app:2"))
	e.sync(time.Second)
	e.sync(time.Second)
	e.sync(11 * time.Second)
	e.sync(time.Second)
	st := e.status("web")
	t.Logf("rollout %+v phase %s reason %s", st.Rollout, st.Phase, st.Reason)
	if st.Rollout.State != hsync.RolloutComplete {
		t.Errorf("rollout of an unchanged sibling's old restarts: %s %q (app image %s)", st.Rollout.State, st.Rollout.Reason, e.app("web").Image)
	}
}
