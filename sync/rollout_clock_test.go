package sync_test

import (
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// offsetClock is a fake clock read off by *off: a host clock that
// steps.
type offsetClock struct {
	*clock.Fake
	off *time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.Fake.Now().Add(*c.off) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// The host's clock steps back an hour (NTP correcting a clock that was
// ahead) after a pod's version started: the start time kept for its slot
// (the latest start wins, whichever container of the slot it was) is
// then an hour ahead of every later start, and the next version of the
// pod is taken for restarted on every sync until the clock catches up:
// rolled back at its deadline though it runs well. The engine dates its
// events by the same clock (the Fake's events never go back: they are
// dated here as the engine would).
func TestRolloutCompletesAfterTheHostClockStepsBack(t *testing.T) {
	off := time.Hour
	var hc offsetClock
	e := newRolloutEnvOn(t, func(f *synctest.Fake) hsync.FullRuntime { return f }, func(c *clock.Fake) clock.Clock {
		hc = offsetClock{Fake: c, off: &off}
		return hc
	})
	e.fake.SetClock(hc.Now) // one host: the engine's clock is hostlet's
	feed := func() {
		e.fake.Emit(hruntime.Event{Action: "test-marker"})
		for ev := range e.evs {
			if ev.Action == "test-marker" {
				return
			}
			ev.Time = hc.Now()
			e.s.HandleEvent(e.ctx, ev)
		}
	}
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	feed()
	e.complete("web", "example.org/app:1")

	off = 0 // the clock steps back an hour
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	feed()
	e.sync(time.Second)
	e.sync(11 * time.Second)
	e.want("r2 ready 11s", "web", hsync.RolloutComplete, "", "example.org/app:2")
}
