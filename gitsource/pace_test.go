package gitsource_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/sources"
)

// waitClock is a fake clock that tells the test every wait Run sets a
// timer for, once the timer is set (so that advancing the clock by it
// fires it).
type waitClock struct {
	*clock.Fake
	waits chan time.Duration
}

func (c *waitClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Fake.NewTimer(d)
	c.waits <- d
	return t
}

// pacedRun is a git source over file:// run by Run on a waitClock, its
// updates taken one by one by the test.
type pacedRun struct {
	t    *testing.T
	f    *fixture
	clk  *waitClock
	src  *gitsource.Source
	out  chan sources.Update
	head string // the commit the remote's main is at
	n    int    // commits made
}

func newPacedRun(t *testing.T, interval time.Duration) *pacedRun {
	f := newFixture(t, false)
	f.cfg.Interval = interval
	f.start()
	r := &pacedRun{t: t, f: f, out: make(chan sources.Update)}
	r.clk = &waitClock{Fake: clock.NewFake(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)), waits: make(chan time.Duration, 16)}
	log, _ := testkit.Logger(t)
	r.src = gitsource.New(f.cfg, f.stateDir, log).WithClock(r.clk).WithRand(rand.New(rand.NewPCG(1, 2)))
	r.commit()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.src.Run(ctx, r.out) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// Changes to the remote, made before a poll.

// breakRemote moves the bare repository away: every poll fails to reach it.
func (r *pacedRun) breakRemote() {
	if err := os.Rename(r.f.repo.Bare, r.f.repo.Bare+".away"); err != nil {
		r.t.Fatal(err)
	}
}

// mendRemote puts the bare repository back.
func (r *pacedRun) mendRemote() {
	if err := os.Rename(r.f.repo.Bare+".away", r.f.repo.Bare); err != nil {
		r.t.Fatal(err)
	}
}

// commit pushes a new good commit.
func (r *pacedRun) commit() {
	r.n++
	r.head = r.f.repo.Change("good", map[string]string{"manifests/a.yaml": podYAML("a", strconv.Itoa(r.n))})
}

// badCommit pushes a commit whose manifest does not decode.
func (r *pacedRun) badCommit() {
	r.n++
	r.head = r.f.repo.Change("bad", map[string]string{"manifests/a.yaml": "version: v1beta1\nid: [a\n"})
}

func (r *pacedRun) mendAndCommit() { r.mendRemote(); r.commit() }

// next takes what Run does after a poll: the update it sends, if any, and
// the wait it sets next.
func (r *pacedRun) next() (u *sources.Update, wait time.Duration) {
	r.t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-r.out:
			if u != nil {
				r.t.Fatalf("two updates from one poll: %+v, then %+v", *u, got)
			}
			u = &got
		case w := <-r.clk.waits:
			return u, w
		case <-deadline:
			r.t.Fatal("Run set no timer within a minute of a poll")
		}
	}
}

// What a poll sends.
const (
	sendsNothing = iota
	sendsUpdate  // the set at the remote's head
	sendsError
)

// pollStep is one poll of Run and the wait it sets after it.
type pollStep struct {
	// change is made to the remote before the poll (optional).
	change func(*pacedRun)
	// trigger polls by Trigger (POST /sync), the clock left as it is;
	// else the clock moves by the last wait. Step 0 is Run's first poll.
	trigger bool
	sends   int
	// base is the wait wanted after the poll, ±10%.
	base time.Duration
}

func repeat(n int, s pollStep) []pollStep {
	out := make([]pollStep, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func steps(parts ...[]pollStep) []pollStep {
	var out []pollStep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(s pollStep) []pollStep { return []pollStep{s} }

// TestRunPacesPolls drives Run on a fake clock: every wait is drawn within
// ±10% of its base and the waits differ (hosts started together drift
// apart); after failures to reach the remote the base doubles from the
// interval up to max(5 min, 10 × interval), and the first success brings
// it back; Trigger polls at once during a backoff; a commit that does not
// decode is no reason to back off.
func TestRunPacesPolls(t *testing.T) {
	t.Parallel()
	const s, m = time.Second, time.Minute
	tests := []struct {
		name     string
		interval time.Duration
		steps    []pollStep
	}{{
		name:     "jitter on every wait",
		interval: 30 * s,
		steps: steps(
			one(pollStep{sends: sendsUpdate, base: 30 * s}),
			repeat(40, pollStep{sends: sendsNothing, base: 30 * s}),
		),
	}, {
		name:     "backoff to 5 min, reset by a success",
		interval: 10 * s,
		steps: steps(
			one(pollStep{sends: sendsUpdate, base: 10 * s}),
			one(pollStep{change: (*pacedRun).breakRemote, sends: sendsError, base: 10 * s}),
			one(pollStep{sends: sendsError, base: 20 * s}),
			one(pollStep{sends: sendsError, base: 40 * s}),
			one(pollStep{sends: sendsError, base: 80 * s}),
			one(pollStep{sends: sendsError, base: 160 * s}),
			repeat(3, pollStep{sends: sendsError, base: 5 * m}),
			// The same commit again: sent, to clear the error.
			one(pollStep{change: (*pacedRun).mendRemote, sends: sendsUpdate, base: 10 * s}),
			one(pollStep{sends: sendsNothing, base: 10 * s}),
			one(pollStep{change: (*pacedRun).breakRemote, sends: sendsError, base: 10 * s}),
			one(pollStep{sends: sendsError, base: 20 * s}),
		),
	}, {
		name:     "backoff to 10 x a long interval",
		interval: 1 * m,
		steps: steps(
			one(pollStep{sends: sendsUpdate, base: 1 * m}),
			one(pollStep{change: (*pacedRun).breakRemote, sends: sendsError, base: 1 * m}),
			one(pollStep{sends: sendsError, base: 2 * m}),
			one(pollStep{sends: sendsError, base: 4 * m}),
			one(pollStep{sends: sendsError, base: 8 * m}),
			repeat(2, pollStep{sends: sendsError, base: 10 * m}),
			one(pollStep{change: (*pacedRun).mendAndCommit, sends: sendsUpdate, base: 1 * m}),
		),
	}, {
		name:     "trigger during a backoff",
		interval: 10 * s,
		steps: steps(
			one(pollStep{sends: sendsUpdate, base: 10 * s}),
			one(pollStep{change: (*pacedRun).breakRemote, sends: sendsError, base: 10 * s}),
			one(pollStep{sends: sendsError, base: 20 * s}),
			one(pollStep{sends: sendsError, base: 40 * s}),
			// Still down: the triggered poll fails too, and counts.
			one(pollStep{trigger: true, sends: sendsError, base: 80 * s}),
			one(pollStep{change: (*pacedRun).mendAndCommit, trigger: true, sends: sendsUpdate, base: 10 * s}),
			one(pollStep{sends: sendsNothing, base: 10 * s}),
		),
	}, {
		name:     "a commit that does not decode keeps the interval",
		interval: 10 * s,
		steps: steps(
			one(pollStep{sends: sendsUpdate, base: 10 * s}),
			one(pollStep{change: (*pacedRun).badCommit, sends: sendsError, base: 10 * s}),
			repeat(3, pollStep{sends: sendsError, base: 10 * s}),
			one(pollStep{change: (*pacedRun).commit, sends: sendsUpdate, base: 10 * s}),
		),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newPacedRun(t, tt.interval)
			var last time.Duration
			seen := map[time.Duration]bool{}
			for i, st := range tt.steps {
				if st.change != nil {
					st.change(r)
				}
				switch {
				case i == 0:
				case st.trigger:
					r.src.Trigger()
				default:
					r.clk.Advance(last)
				}
				u, wait := r.next()
				switch {
				case st.sends == sendsNothing && u != nil:
					t.Fatalf("poll %d: update %s (err %v), want none", i, u.Revision, u.Err)
				case st.sends == sendsUpdate && (u == nil || u.Err != nil || u.Revision != r.head):
					t.Fatalf("poll %d: update %+v, want one at %s", i, u, r.head)
				case st.sends == sendsError && (u == nil || u.Err == nil):
					t.Fatalf("poll %d: update %+v, want an error", i, u)
				}
				if u != nil {
					r.f.merger.Apply(*u)
					// The status reports the error, backoff or not.
					if got := r.f.merger.State().Sources[0].Error; (got != "") != (u.Err != nil) {
						t.Fatalf("poll %d: error in the source's status %q after an update with error %v", i, got, u.Err)
					}
				}
				lo, hi := st.base-st.base/10, st.base+st.base/10
				if wait < lo || wait > hi {
					t.Fatalf("poll %d: wait %s, want %s ±10%% [%s, %s]", i, wait, st.base, lo, hi)
				}
				last = wait
				seen[wait] = true
			}
			if len(seen) < len(tt.steps)/2 {
				t.Fatalf("%d polls drew only %d different waits: %v", len(tt.steps), len(seen), seen)
			}
		})
	}
}

// TestBackoffCap: the base wait after failures grows to 10 × interval,
// at least 5 minutes.
func TestBackoffCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ interval, want time.Duration }{
		{time.Second, 5 * time.Minute},
		{10 * time.Second, 5 * time.Minute},
		{30 * time.Second, 5 * time.Minute},
		{time.Minute, 10 * time.Minute},
		{time.Hour, 10 * time.Hour},
	} {
		if got := gitsource.BackoffCap(tt.interval); got != tt.want {
			t.Errorf("BackoffCap(%s) = %s, want %s", tt.interval, got, tt.want)
		}
	}
}
