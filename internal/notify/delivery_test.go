package notify

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
)

// TestRetryBackoff: a receiver answering 500 is sent the notification
// again after 1 s, then 2 s (on the fake clock, never sooner), and once it
// answers 200 the notification counts as sent, once; one that always
// fails is given up after Attempts and counted as failed.
func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		name     string
		fails    int // answers 500 to the first fails requests
		attempts int
		waits    []time.Duration // between attempts
		want     Stat
	}{
		{name: "succeeds on the third attempt", fails: 2, attempts: 5, waits: []time.Duration{time.Second, 2 * time.Second},
			want: Stat{Target: "hook", Sent: 1}},
		{name: "gives up after the attempts", fails: 1 << 30, attempts: 4, waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			want: Stat{Target: "hook", Failed: 1}},
		{name: "waits stop growing at the cap", fails: 1 << 30, attempts: 4, waits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second},
			want: Stat{Target: "hook", Failed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReceiver(t, func(n int) int {
				if n <= tt.fails {
					return http.StatusInternalServerError
				}
				return http.StatusOK
			})
			clk := clock.NewFake(t0)
			ev := eventlog.NewLog(100)
			maxWait := tt.waits[len(tt.waits)-1]
			n, _ := start(t, ev, []config.Notify{{Name: "hook", URL: r.srv.URL}}, Options{
				Clock: clk, Retry: Retry{Attempts: tt.attempts, Initial: time.Second, Max: maxWait},
			})
			ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "api"})
			for i, d := range tt.waits {
				waitRequests(t, r, i+1)
				ctx, cancel := context.WithTimeout(t.Context(), wait)
				if err := clk.WaitForTimers(ctx, 1); err != nil {
					t.Fatalf("attempt %d: the target does not wait: %v", i+1, err)
				}
				cancel()
				clk.Advance(d - time.Millisecond)
				if got := len(r.requests()); got != i+1 || clk.Timers() != 1 {
					t.Fatalf("attempt %d: %d requests and %d timers %s after it, want %d and a wait of %s", i+1, got, clk.Timers(), d-time.Millisecond, i+1, d)
				}
				clk.Advance(time.Millisecond)
			}
			waitRequests(t, r, len(tt.waits)+1)
			got := waitStat(t, n, "hook", func(s Stat) bool { return s.Sent+s.Failed == 1 })
			if got != tt.want {
				t.Errorf("stat = %+v, want %+v", got, tt.want)
			}
			// A second notification is delivered after the first: the first
			// was sent no more times than counted.
			ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "marker"})
			if tt.want.Sent == 1 {
				r.waitPod(t, "marker")
				if got := len(r.requests()); got != tt.fails+2 {
					t.Errorf("%d requests, want %d (%d failures, one success, the marker)", got, tt.fails+2, tt.fails)
				}
			}
		})
	}
}

// waitRequests waits until r has received n requests.
func waitRequests(t *testing.T, r *receiver, n int) {
	t.Helper()
	testkit.WaitFor(t, wait, func() (bool, string) {
		got := len(r.requests())
		return got >= n, fmt.Sprintf("%d requests, want %d", got, n)
	})
}

// hanging is a receiver that answers no request until released (or the
// test ends).
type hanging struct {
	release chan struct{}
	*receiver
}

func newHanging(t *testing.T) *hanging {
	release := make(chan struct{})
	r := newReceiver(t, func(int) int {
		select {
		case <-release:
		case <-t.Context().Done():
		}
		return http.StatusOK
	})
	return &hanging{release: release, receiver: r}
}

// TestQueueDropsOldest: while the receiver hangs on the first
// notification, the queue holds QueueSize, each notification beyond
// pushes the oldest out (counted); once the receiver answers, the
// newest arrive in order.
func TestQueueDropsOldest(t *testing.T) {
	h := newHanging(t)
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "down", URL: h.srv.URL}}, Options{QueueSize: 3, Retry: Retry{Timeout: time.Hour}})
	ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "p1"})
	waitRequests(t, h.receiver, 1)
	for i := 2; i <= 10; i++ {
		ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: fmt.Sprintf("p%d", i)})
		want := Stat{Target: "down", Queued: min(i-1, 3), Dropped: uint64(max(i-1-3, 0))}
		waitStat(t, n, "down", func(s Stat) bool { return s == want })
	}
	close(h.release)
	waitRequests(t, h.receiver, 4)
	var got []string
	for _, note := range h.notifications(t) {
		got = append(got, note.Pod)
	}
	if want := []string{"p1", "p8", "p9", "p10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("received %v, want %v", got, want)
	}
	if s := waitStat(t, n, "down", func(s Stat) bool { return s.Sent == 4 }); s.Dropped != 6 || s.Failed != 0 {
		t.Errorf("stat = %+v, want 4 sent, 6 dropped", s)
	}
}

// TestDownTargetBlocksNothing: while one target hangs, recording 10,000
// events finishes (Record never waits for a target), the hanging
// target's queue stays within its bound and counts what it drops, and
// another target still gets its notifications.
func TestDownTargetBlocksNothing(t *testing.T) {
	h := newHanging(t)
	up := newReceiver(t, nil)
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "down", URL: h.srv.URL}, {Name: "up", URL: up.srv.URL}},
		Options{QueueSize: 10, Retry: Retry{Timeout: time.Hour}})
	for i := range 10000 {
		ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: fmt.Sprintf("p%d", i)})
	}
	// The marker may be missed like any event recorded faster than Run
	// reads: record it until it arrives.
	testkit.WaitFor(t, wait, func() (bool, string) {
		ev.Record(eventlog.Event{Type: eventlog.Rollback, Pod: "marker"})
		for _, note := range up.notifications(t) {
			if note.Pod == "marker" {
				return true, ""
			}
		}
		return false, "the target that is up got no marker"
	})
	s := stat(t, n, "down")
	if s.Queued > 10 || s.Dropped == 0 || s.Sent != 0 {
		t.Errorf("down: %+v, want at most 10 queued, some dropped, none sent", s)
	}
	if got := len(h.requests()); got != 1 {
		t.Errorf("the hanging receiver got %d requests, want 1 (the one it holds)", got)
	}
}

// TestRunJoins: when its context ends, Run returns promptly, also with
// a request in flight to a receiver that hangs, from a webhook and from a
// chat target's helper (killed), and leaves no goroutine behind.
func TestRunJoins(t *testing.T) {
	h := newHanging(t)
	up := newReceiver(t, nil)
	chatURL := strings.Replace(h.srv.URL, "http://", "generic://", 1) + "/chat?disabletls=yes"
	ignore := goleak.IgnoreCurrent()
	ev := eventlog.NewLog(100)
	_, stop := start(t, ev, []config.Notify{{Name: "down", URL: h.srv.URL}, {Name: "chat-down", URL: chatURL}, {Name: "up", URL: up.srv.URL}},
		Options{Retry: Retry{Timeout: time.Hour}, Helper: helper(t)})
	for i := range 5 {
		ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: fmt.Sprintf("p%d", i)})
	}
	waitRequests(t, h.receiver, 2)
	up.waitPod(t, "p4")
	begin := time.Now()
	stop()
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Run returned %s after its context's end", d)
	}
	close(h.release)
	h.srv.Close()
	up.srv.Close()
	if err := goleak.Find(ignore); err != nil {
		t.Error(err)
	}
}
