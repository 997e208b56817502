package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// startFails is the fake engine with starts failing while fail is set.
type startFails struct {
	*synctest.Fake
	fail atomic.Bool
}

func (e *startFails) Start(ctx context.Context, id string) error {
	if e.fail.Load() {
		return fmt.Errorf("start container %s: %w", id, errors.New("Error response from daemon: boom"))
	}
	return e.Fake.Start(ctx, id)
}

// TestBackoffEndsWhenThePodRunsAgain: a pod whose start failed backs off;
// once it runs as desired without hostlet (the engine's restart policy
// started it), its backoff is over, so a later failure waits 10 s again,
// not twice the last wait (a fault run waited 40 s after an engine restart
// for a pod that had been running for a minute).
func TestBackoffEndsWhenThePodRunsAgain(t *testing.T) {
	rt := &startFails{Fake: synctest.NewFake()}
	clk := clock.NewFake(clockT0)
	s, err := hsync.New(rt, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, backoffPod)}, Ready: true})
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	id := appID(t, rt.Fake)
	stopAndFail := func() {
		t.Helper()
		// Stopped behind hostlet's back: the engine does not start it again.
		if err := rt.Fake.Stop(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		rt.fail.Store(true)
		if err := s.SyncOnce(ctx); err == nil {
			cs, _ := rt.Fake.List(ctx)
			t.Fatalf("the sync did not try to start it (still backing off from an earlier failure?): containers %+v", cs)
		}
		rt.fail.Store(false)
	}
	stopAndFail() // backoff: 10 s from t0
	// The engine starts it again by itself; hostlet finds it running.
	if err := rt.Fake.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	stopAndFail() // a new first failure: 10 s from t0+2s, not 20 s
	clk.Advance(10 * time.Second)
	before := countCalls(rt.Fake, "Start", id)
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatalf("sync 10 s after the new failure: %v", err)
	}
	if countCalls(rt.Fake, "Start", id) == before {
		t.Error("10 s after a failure that followed a run, the pod is still backing off (the old backoff doubled)")
	}
	if p, ok := podStatus(s, "web"); !ok || p.Phase != hsync.PhaseRunning {
		t.Errorf("pod %v %+v, want Running", ok, p)
	}
}

const backoffPod = `
version: v1beta1
id: web
restartPolicy: Always
containers:
  - {name: app, image: "example.org/app:1"}
`

func appID(t *testing.T, f *synctest.Fake) string {
	t.Helper()
	cs, err := f.List(t.Context())
	if err != nil || len(cs) != 1 {
		t.Fatalf("containers %v %v, want one", cs, err)
	}
	return cs[0].ID
}
