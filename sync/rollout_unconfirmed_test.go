package sync_test

import (
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// The Syncer reads the clock once to pick the pods whose rollout it
// confirms by an inspect, and again to advance the rollouts: a pod whose
// minReadySeconds pass in between (the inspects of the other pods took
// that long) completes unconfirmed, a crash the engine restarted (its
// start event unread) passing for ready: the case the confirmation is
// for.
func TestRolloutIsNotCompletedUnconfirmedWhenItBecomesDueDuringTheSync(t *testing.T) {
	var clk *clock.Fake
	slow := "" // the container whose inspect takes 100 ms
	e := newRolloutEnvOn(t, func(f *synctest.Fake) hsync.FullRuntime {
		return &inspectHook{Fake: f, inspect: func(id string, d hruntime.Details, err error) (hruntime.Details, error) {
			if id == slow {
				clk.Advance(100 * time.Millisecond)
			}
			return d, err
		}}
	}, nil)
	clk = e.clk
	e.set(e.pod("a", "r1", "example.org/a:1", "Auto", ""))
	e.sync(0)
	e.sync(time.Second) // a ready since T+1s
	e.set(e.pod("a", "r1", "example.org/a:1", "Auto", ""), e.pod("b", "r1", "example.org/b:1", "Auto", ""))
	e.sync(50 * time.Millisecond) // b made
	e.sync(50 * time.Millisecond) // b ready since T+1.1s
	e.want("b ready", "b", hsync.RolloutProgressing, "complete after 10s ready", "example.org/b:1")

	// A second later b crashed and the engine restarted it; its events
	// stay unread.
	e.clk.Advance(time.Second)
	if err := e.fake.Exit(e.app("b").ID, 1); err != nil {
		t.Fatal(err)
	}
	slow = e.app("a").ID
	// T+11.05s: a is due (10.05s ready), b not yet (9.95s); the
	// inspect of a takes 100 ms.
	e.sync(9*time.Second - 50*time.Millisecond)
	e.want("a confirmed", "a", hsync.RolloutComplete, "", "example.org/a:1")
	e.want("b restarted since it was seen ready", "b", hsync.RolloutProgressing, "complete after 10s ready", "example.org/b:1")
}

// A container gone between the list and the inspect (removed by an
// operator, replaced) is no confirmed run: the rollout does not complete
// on the list's word alone; the pod is not ready that sync, and completes
// minReadySeconds after it is seen ready again.
func TestRolloutIsNotCompletedWhenTheConfirmingInspectFails(t *testing.T) {
	fail := false
	e := newRolloutEnvOn(t, func(f *synctest.Fake) hsync.FullRuntime {
		return &inspectHook{Fake: f, inspect: func(id string, d hruntime.Details, err error) (hruntime.Details, error) {
			if fail {
				return hruntime.Details{}, hruntime.ErrNotFound
			}
			return d, err
		}}
	}, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.sync(time.Second)
	fail = true
	e.sync(10 * time.Second)
	e.want("inspect failed", "web", hsync.RolloutProgressing, "container app not inspected", "example.org/app:1")
	fail = false
	e.sync(time.Second)
	e.want("ready again", "web", hsync.RolloutProgressing, "complete after 10s ready", "example.org/app:1")
	e.sync(11 * time.Second)
	e.want("inspect confirms", "web", hsync.RolloutComplete, "", "example.org/app:1")
}
