package sync_test

// Every goroutine the reconciler starts is owned and joined: probe workers
// by Close (SyncOnce callers) or Run's return, the engine event reader by
// Run's return. The engine's event stream is read on a goroutine of its
// own into a bounded queue that never blocks the reader; an overflow is
// counted and triggers a sync.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// probedPodFmt is a pod whose container has an exec liveness probe run
// every second from the start; %[2]s is the probe's command.
const probedPodFmt = `
version: v1beta1
id: %[1]s
containers:
  - name: app
    image: example.org/app:1
    livenessProbe:
      type: exec
      exec: {command: [%[2]s]}
      periodSeconds: 1
      failureThreshold: 3
`

func quietSyncer(t *testing.T, rt hsync.FullRuntime) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(rt, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Concurrency: 2,
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noGoroutineLeft waits (up to waitFake's deadline, longer than goleak's
// own retries) until no goroutine is running that was not running when
// ignore was taken.
func noGoroutineLeft(t *testing.T, ignore goleak.Option) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		err := goleak.Find(ignore)
		return err == nil, fmt.Sprint(err)
	})
}

// execs counts the probe execs made in container id so far.
func execs(fake *synctest.Fake, id string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == "Exec" && c.Arg == id {
			n++
		}
	}
	return n
}

// waitExecs waits until container id's probe has run more than n times.
func waitExecs(t *testing.T, fake *synctest.Fake, id string, n int) int {
	t.Helper()
	var got int
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		got = execs(fake, id)
		return got > n, fmt.Sprintf("%d probe execs in %s, want more than %d", got, id, n)
	})
	return got
}

// The probe workers SyncOnce starts keep running after it returned (under
// its context) until Close, which stops and joins every one of them: also
// the worker a later sync replaced because the probe changed.
func TestCloseJoinsProbeWorkers(t *testing.T) {
	defer noGoroutineLeft(t, goleak.IgnoreCurrent())
	fake := synctest.NewFake()
	s := quietSyncer(t, fake)
	set := func(cmd string) {
		s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(probedPodFmt, "web", cmd))}, Ready: true})
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatalf("SyncOnce: %v", err)
		}
	}
	set("/ok")
	c, ok := runningSlot(fake, "web", "app")
	if !ok {
		t.Fatalf("pod web not running: %v", fake.Calls())
	}
	n := waitExecs(t, fake, c.ID, 0)
	// A new probe: the old worker is stopped (joined by Close), a new one
	// starts.
	set("/still-ok")
	waitExecs(t, fake, c.ID, n)
	s.Close()
	s.Close() // a second Close does nothing
}

// Run stops and joins what it started when its context ends: the event
// reader, the probe workers, the engine's event stream.
func TestRunLeavesNoGoroutine(t *testing.T) {
	defer noGoroutineLeft(t, goleak.IgnoreCurrent())
	fake := synctest.NewFake()
	s := quietSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(probedPodFmt, "web", "/ok"))}, Ready: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var c hruntime.Container
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		var ok bool
		c, ok = runningSlot(fake, "web", "app")
		return ok, "pod web not running"
	})
	waitExecs(t, fake, c.ID, 0)
	cancel()
	awaitRun(t, done)
}

// awaitRun waits for the result of a cancelled Run on done: nil within 10 s.
func awaitRun(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
}

// floodRuntime is a Fake whose event stream is the test's own unbuffered
// channel (the test plays the engine's reader: a send that does not
// complete is a reader held up) and whose List waits, while held, until
// released.
type floodRuntime struct {
	*synctest.Fake
	events  chan hruntime.Event
	release chan struct{}
	listing chan struct{}
	lists   atomic.Int64
}

func (f *floodRuntime) Events(context.Context) <-chan hruntime.Event { return f.events }

func (f *floodRuntime) List(ctx context.Context) ([]hruntime.Container, error) {
	f.lists.Add(1)
	select {
	case f.listing <- struct{}{}:
	default:
	}
	select {
	case <-f.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.Fake.List(ctx)
}

// While a sync runs (here: its list hangs), the engine's events are taken
// at once: the queue fills, every event beyond it is dropped and counted
// (EventsDropped, hostlet_engine_events_dropped_total), and a sync that
// lists everything follows once the running one ends.
func TestEventOverflowNeverBlocksTheReader(t *testing.T) {
	defer noGoroutineLeft(t, goleak.IgnoreCurrent())
	rt := &floodRuntime{Fake: synctest.NewFake(), events: make(chan hruntime.Event), release: make(chan struct{}), listing: make(chan struct{}, 1)}
	s := quietSyncer(t, rt)
	met := metrics.New("test", "", s.Report, nil)
	met.EngineEventsDropped(s.EventsDropped)

	s.SetDesired(hsync.Desired{Ready: true}) // wakes Run for its first sync
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		close(rt.events) // the engine's stream ends with ctx
		awaitRun(t, done)
	}
	defer stop()

	select {
	case <-rt.listing:
	case <-time.After(10 * time.Second):
		t.Fatal("no sync started within 10s")
	}
	// The sync hangs in its list. Events without a pod label need no sync
	// of their own: only the overflow can cause the next one.
	const extra = 500
	n := hsync.EventQueueSize + extra
	deadline := time.After(10 * time.Second)
	for i := range n {
		select {
		case rt.events <- hruntime.Event{Action: "attach", ContainerID: fmt.Sprintf("c%d", i), Labels: map[string]string{}}:
		case <-deadline:
			t.Fatalf("the event reader blocked after %d of %d events while a sync runs", i, n)
		}
	}
	// The reader counts the last event just after taking it.
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		got := s.EventsDropped()
		return got == extra, fmt.Sprintf("EventsDropped() = %d, want %d (the queue holds %d)", got, extra, hsync.EventQueueSize)
	})
	if body := scrape(t, met); !strings.Contains(body, fmt.Sprintf("\nhostlet_engine_events_dropped_total %d\n", extra)) {
		t.Errorf("metrics do not count %d dropped events:\n%s", extra, grepLines(body, "hostlet_engine_events"))
	}
	if got := rt.lists.Load(); got != 1 {
		t.Fatalf("%d list calls while the first sync hangs, want 1", got)
	}
	close(rt.release)
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		got := rt.lists.Load()
		return got >= 2, fmt.Sprintf("%d list calls: no sync after the overflow", got)
	})
	stop()
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	srv.Client().CloseIdleConnections()
	return string(b)
}

func grepLines(s, substr string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// The events a pass leaves queued (a stop, die, destroy, create and start
// for each container it replaced) are handled together and ask for one
// sync, not one each; the drain never waits for more, stops at its bound
// (a steady stream cannot hold off the sync), and says when the stream
// ended.
func TestQueuedEventsAskForOneSync(t *testing.T) {
	s := quietSyncer(t, synctest.NewFake())
	ctx := t.Context()
	ev := func(action string) hruntime.Event {
		return hruntime.Event{Action: action, ContainerID: "c", Labels: map[string]string{hruntime.LabelPod: "p", hruntime.LabelContainer: "app"}}
	}
	tests := []struct {
		name       string
		queued     []hruntime.Event
		close      bool
		want       bool
		left       int
		closedSeen bool
	}{
		{name: "a pass's burst asks for a sync", queued: slices.Repeat([]hruntime.Event{ev("stop"), ev("die"), ev("destroy"), ev("create"), ev("start")}, 40), want: true},
		{name: "events that ask for none", queued: []hruntime.Event{ev("create"), ev("attach"), {Action: "die", Labels: map[string]string{}}}},
		{name: "nothing queued"},
		{name: "the stream ended", queued: []hruntime.Event{ev("die")}, close: true, want: true, closedSeen: true},
		{name: "more than the bound: the rest wait for the next drain", queued: slices.Repeat([]hruntime.Event{ev("create")}, hsync.MaxDrainedEvents+5), left: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan hruntime.Event, len(tt.queued))
			for _, e := range tt.queued {
				ch <- e
			}
			if tt.close {
				close(ch)
			}
			out, want := s.DrainEvents(ctx, ch)
			if want != tt.want {
				t.Errorf("sync asked: %v, want %v", want, tt.want)
			}
			if (out == nil) != tt.closedSeen {
				t.Errorf("queue returned %v, want nil only once the stream ended", out)
			}
			if !tt.close && len(ch) != tt.left {
				t.Errorf("%d events left queued, want %d", len(ch), tt.left)
			}
		})
	}
}
