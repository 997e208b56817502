package sync_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// inspectHook is the Fake engine with its Inspect answers changed by a
// test: inspect is called with the Fake's answer and returns the one the
// Syncer gets.
type inspectHook struct {
	*synctest.Fake
	inspect func(id string, d hruntime.Details, err error) (hruntime.Details, error)
}

func (h *inspectHook) Inspect(ctx context.Context, id string) (hruntime.Details, error) {
	d, err := h.Fake.Inspect(ctx, id)
	if h.inspect != nil {
		return h.inspect(id, d, err)
	}
	return d, err
}

// newRolloutEnvOn is newRolloutEnv with the Syncer on the env's Fake as
// wrap makes it, and on hostlet's clock as hostClock makes it of the
// env's (nil: the env's).
func newRolloutEnvOn(t *testing.T, wrap func(*synctest.Fake) hsync.FullRuntime, hostClock func(*clock.Fake) clock.Clock) *rolloutEnv {
	e := &rolloutEnv{t: t, fake: synctest.NewFake(), clk: clock.NewFake(time.Now()), dir: t.TempDir()}
	e.fake.SetClock(e.clk.Now)
	var hc clock.Clock = e.clk
	if hostClock != nil {
		hc = hostClock(e.clk)
	}
	e.ctx, e.cancel = context.WithCancel(t.Context())
	e.ev = eventlog.NewLog(100)
	s, err := hsync.New(wrap(e.fake), hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: hc, StateDir: e.dir,
	}, slog.New(slog.DiscardHandler), e.ev)
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	e.evs = e.fake.Events(e.ctx)
	t.Cleanup(func() {
		e.cancel()
		s.Close()
	})
	return e
}

// The engine reports a container it is about to restart (its process
// exited, the restart policy's delay running) as running, and restarting:
// the confirming inspect takes it for restarting, in the rollout (not
// complete) and in the status, and the rollout completes once it has run
// minReadySeconds again.
func TestRolloutWaitsForAContainerTheEngineIsAboutToRestart(t *testing.T) {
	restarting := false
	e := newRolloutEnvOn(t, func(f *synctest.Fake) hsync.FullRuntime {
		return &inspectHook{Fake: f, inspect: func(id string, d hruntime.Details, err error) (hruntime.Details, error) {
			if restarting && err == nil {
				d.Restarting = true
			}
			return d, err
		}}
	}, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.sync(time.Second)
	restarting = true
	e.sync(10 * time.Second)
	e.want("about to restart", "web", hsync.RolloutProgressing, "container app is restarting", "example.org/app:1")
	if cs := e.status("web").Containers; len(cs) != 1 || cs[0].State != hruntime.StateRestarting {
		t.Fatalf("containers %+v, want app restarting", cs)
	}
	restarting = false
	e.sync(time.Second)
	e.want("running again", "web", hsync.RolloutProgressing, "complete after 10s ready", "example.org/app:1")
	e.sync(10 * time.Second)
	e.want("ready 10s again", "web", hsync.RolloutComplete, "", "example.org/app:1")
}

// A container the list shows running but that exited meanwhile (the
// inspect says so) is taken as exited: with restartPolicy Never and a
// code of 1 the version failed; with OnFailure and a code of 0 it is
// done, and the rollout completes.
func TestRolloutTakesTheExitAnInspectReports(t *testing.T) {
	for _, tt := range []struct {
		name, policy string
		code         int
		state        string
	}{
		{"Never, exited 1", "Never", 1, hsync.RolloutProgressing},
		{"OnFailure, exited 0", "OnFailure", 0, hsync.RolloutComplete},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exited := false
			e := newRolloutEnvOn(t, func(f *synctest.Fake) hsync.FullRuntime {
				return &inspectHook{Fake: f, inspect: func(id string, d hruntime.Details, err error) (hruntime.Details, error) {
					if exited && err == nil {
						d.Running, d.ExitCode, d.FinishedAt = false, tt.code, d.StartedAt.Add(time.Second)
					}
					return d, err
				}}
			}, nil)
			p := e.pod("web", "r1", "example.org/app:1", "Auto", "")
			p.Manifest.RestartPolicy = tt.policy
			e.set(p)
			e.sync(0)
			e.sync(time.Second)
			exited = true
			e.sync(10 * time.Second)
			st := e.status("web")
			if st.Rollout == nil || st.Rollout.State != tt.state {
				t.Fatalf("rollout %+v, want %s", st.Rollout, tt.state)
			}
			if tt.code != 0 && !strings.Contains(st.Rollout.Reason, "container app exited (1)") {
				t.Fatalf("rollout %+v, want the exit as its reason", st.Rollout)
			}
			if cs := st.Containers; len(cs) != 1 || cs[0].State != hruntime.StateExited {
				t.Fatalf("containers %+v, want app exited", cs)
			}
		})
	}
}
