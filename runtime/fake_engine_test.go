package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/registry"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/testkit"
)

// A fake engine for what the real one cannot be made to do on demand: a
// broken event stream, errors inside a pull stream, a slow pull.

var apiPrefix = regexp.MustCompile(`^/v[0-9.]+`)

type fakeEngine struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	eventSince []string // the since parameter of each /events request
	eventConns int
	pulls      atomic.Int32
	// pullsGone counts pull requests the client gave up on.
	pullsGone   atomic.Int32
	pullAuth    []string
	releasePull chan struct{}
	// hang: every request but /events waits, unanswered, until the
	// client gives up (an engine restarting behind a socket systemd
	// holds, its stream's end already on the way).
	hang atomic.Bool
}

func newFakeEngine(t *testing.T) (*fakeEngine, *Docker) {
	f := &fakeEngine{t: t, releasePull: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := New(ctx, "tcp://"+f.srv.Listener.Addr().String(), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	d.configDir = t.TempDir()
	return f, d
}

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	path := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if f.hang.Load() && path != "/events" {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Api-Version", "1.41")
	switch {
	case path == "/_ping":
		fmt.Fprint(w, "OK")
	case serveEngineIdentity(w, path):
	case path == "/events":
		f.mu.Lock()
		f.eventConns++
		n := f.eventConns
		f.eventSince = append(f.eventSince, r.URL.Query().Get("since"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// Each connection delivers one event, then the first two break.
		// It is of a container hostlet made: the engine gives its labels
		// and name as attributes.
		attrs := map[string]string{
			"exitCode": fmt.Sprint(n), LabelManaged: "true", LabelInstance: "fake", LabelPod: "web", LabelContainer: "app", LabelHash: "v1:x",
			"name": ContainerName("fake", "web", "app", "v1:x"),
		}
		msg := events.Message{
			Type:     events.ContainerEventType,
			Action:   "die",
			Actor:    events.Actor{ID: fmt.Sprintf("c%d", n), Attributes: attrs},
			TimeNano: int64(n) * 1_000_000_000_000,
		}
		_ = json.NewEncoder(w).Encode(msg)
		w.(http.Flusher).Flush()
		if n <= 2 {
			return // the stream ends: the client must reconnect
		}
		<-r.Context().Done()
	case path == "/images/create":
		f.pulls.Add(1)
		f.mu.Lock()
		f.pullAuth = append(f.pullAuth, r.Header.Get("X-Registry-Auth"))
		f.mu.Unlock()
		select {
		case <-f.releasePull:
		case <-r.Context().Done():
			f.pullsGone.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"Pulling from x"}`)
		fmt.Fprintln(w, `{"errorDetail":{"message":"manifest for x:1 not found: manifest unknown"},"error":"manifest for x:1 not found: manifest unknown"}`)
	default:
		http.Error(w, `{"message":"not in the fake"}`, http.StatusNotImplemented)
	}
}

func TestNewUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := New(ctx, "unix:///nonexistent/docker.sock", "x", nil)
	if err == nil || !strings.Contains(err.Error(), "unix:///nonexistent/docker.sock") || !errors.Is(err, ErrUnavailable) {
		t.Errorf("New with no engine: %v; want ErrUnavailable naming the host", err)
	}
	if _, err := New(ctx, "", "", nil); err == nil {
		t.Error("New with an empty instance: no error")
	}
}

func TestEventsReconnect(t *testing.T) {
	f, d := newFakeEngine(t)
	d.eventBackoffMax = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := d.Events(ctx)
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-ch:
			if ev.Action == EventStreamBroke {
				got = append(got, "broke")
				continue
			}
			want := len(got) + 1
			if ev.ContainerID != fmt.Sprintf("c%d", want) || ev.ExitCode != want || ev.Action != "die" {
				t.Fatalf("event %d = %+v", want, ev)
			}
			got = append(got, ev.ContainerID)
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far %q: the next not delivered (reconnect broken?)", got)
		}
	}
	// A stream that closes and subscribes again at once is no outage.
	if want := []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	f.mu.Lock()
	since := append([]string(nil), f.eventSince...)
	f.mu.Unlock()
	// Reconnects replay from just after the last event seen.
	if len(since) < 3 || since[1] != "1000.000000001" || since[2] != "2000.000000001" {
		t.Errorf("since parameters = %q, want reconnects to resume after the last event", since)
	}

	cancel()
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("channel not closed after cancel")
		}
	}
	waitNoGoroutine(t, "runtime.(*Docker).watchEvents", "client.(*Client).Events")
}

// TestEventsReconnectWaitsOnTheClock: after a broken stream the next
// subscription waits its backoff on the Docker's clock, not on the wall's.
func TestEventsReconnectWaitsOnTheClock(t *testing.T) {
	f, d := newFakeEngine(t)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	WithClock(clk)(d)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := d.Events(ctx)
	conns := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.eventConns
	}
	for want := 1; want <= 2; want++ {
		select {
		case ev := <-containerEvents(ch):
			if ev.ContainerID != fmt.Sprintf("c%d", want) {
				t.Fatalf("event %d = %+v", want, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not delivered", want)
		}
		// The stream broke after its one event: the reconnect waits.
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := clk.WaitForTimers(wctx, 1); err != nil {
			t.Fatalf("no backoff timer on the clock after stream %d: %v", want, err)
		}
		wcancel()
		if n := conns(); n != want {
			t.Fatalf("%d subscriptions before the clock moved, want %d", n, want)
		}
		clk.Advance(100 * time.Millisecond) // the first backoff, as the stream delivered
	}
	select {
	case ev := <-containerEvents(ch):
		if ev.ContainerID != "c3" {
			t.Fatalf("event 3 = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("event 3 not delivered after the clock moved")
	}
}

// An engine that refuses the subscription (gone: its socket closed) is
// told with EventStreamBroke, each time it refuses, so the syncer can
// tell its outage from its containers' crashes.
func TestEventsTellAnEngineThatRefuses(t *testing.T) {
	f, d := newFakeEngine(t)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	WithClock(clk)(d)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := d.Events(ctx)
	if ev := <-containerEvents(ch); ev.ContainerID != "c1" {
		t.Fatalf("event 1 = %+v", ev)
	}
	// The stream broke after its event; the engine goes away before the
	// reconnect.
	f.srv.Listener.Close()
	f.srv.CloseClientConnections()
	for i := range 2 {
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := clk.WaitForTimers(wctx, 1); err != nil {
			t.Fatalf("no backoff timer %d: %v", i, err)
		}
		wcancel()
		clk.Advance(5 * time.Second)
		select {
		case ev := <-ch:
			if ev.Action != EventStreamBroke || ev.ContainerID != "" {
				t.Fatalf("refusal %d: event %+v, want %s", i, ev, EventStreamBroke)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("refusal %d: no %s event", i, EventStreamBroke)
		}
	}
}

// An engine restarting behind a socket that accepts and does not answer
// (systemd's docker.socket) is away all the same: the ping after the
// broken stream goes unanswered, and EventStreamBroke is sent.
func TestEventsTellAnEngineThatDoesNotAnswer(t *testing.T) {
	f, d := newFakeEngine(t)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	WithClock(clk)(d)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.hang.Store(true)
	ch := d.Events(ctx)
	if ev := <-ch; ev.ContainerID != "c1" {
		t.Fatalf("event 1 = %+v", ev)
	}
	select {
	case ev := <-ch:
		if ev.Action != EventStreamBroke {
			t.Fatalf("event %+v, want %s", ev, EventStreamBroke)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s for an engine that does not answer", EventStreamBroke)
	}
	f.hang.Store(false)
	cancel()
}

// containerEvents passes on the next container event of ch, passing
// over the breaks of the stream.
func containerEvents(ch <-chan Event) <-chan Event {
	out := make(chan Event, 1)
	go func() {
		for ev := range ch {
			if ev.Action != EventStreamBroke {
				out <- ev
				return
			}
		}
	}()
	return out
}

func TestPullSharedAndStreamError(t *testing.T) {
	f, d := newFakeEngine(t)
	cfg := fmt.Sprintf(`{"auths":{"registry.example.org":{"auth":%q}}}`, base64.StdEncoding.EncodeToString([]byte("u:pw")))
	if err := os.WriteFile(filepath.Join(d.configDir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const ref = "registry.example.org/team/x:1"
	ctx := t.Context()
	errs := make(chan error, 3)
	var started sync.WaitGroup
	for range 3 {
		started.Add(1)
		go func() {
			started.Done()
			errs <- d.EnsureImage(ctx, ref, PullAlways)
		}()
	}
	started.Wait()
	// A caller that gives up returns at once; the shared pull goes on.
	gone, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := d.EnsureImage(gone, ref, PullAlways); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pull with an expiring context: %v", err)
	}
	close(f.releasePull)
	for range 3 {
		err := <-errs
		if !errors.Is(err, ErrImagePull) || err.Error() != "pull image "+ref+": manifest for x:1 not found: manifest unknown" {
			t.Errorf("pull error = %v; want ErrImagePull with the stream's message", err)
		}
	}
	if n := f.pulls.Load(); n != 1 {
		t.Errorf("%d pull requests for concurrent pulls of one image, want 1", n)
	}
	f.mu.Lock()
	auth := f.pullAuth[0]
	f.mu.Unlock()
	ac, err := registry.DecodeAuthConfig(auth)
	if err != nil || ac.Username != "u" || ac.Password != "pw" {
		t.Errorf("X-Registry-Auth = %q (%+v, %v), want the config.json credentials", auth, ac, err)
	}
}

// A shared pull runs while any caller waits; when the last one gives up
// (its deadline: the syncer's sync.pullTimeout), the engine request is
// cancelled, so a hanging registry holds nothing once nobody waits, and the
// next caller starts a new pull.
func TestPullCancelledWithItsLastCaller(t *testing.T) {
	f, d := newFakeEngine(t)
	const ref = "registry.example.org/team/hangs:1"
	long, cancelLong := context.WithCancel(t.Context())
	defer cancelLong()
	errs := make(chan error, 1)
	go func() { errs <- d.EnsureImage(long, ref, PullAlways) }()
	testkit.WaitFor(t, 5*time.Second, func() (bool, string) { n := f.pulls.Load(); return n == 1, fmt.Sprintf("f.pulls = %d, want 1", n) })
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := d.EnsureImage(short, ref, PullAlways); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pull with an expiring context: %v", err)
	}
	if n := f.pullsGone.Load(); n != 0 {
		t.Errorf("the engine request was cancelled while a caller still waits (%d)", n)
	}
	cancelLong()
	if err := <-errs; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), ref) {
		t.Errorf("pull whose caller went away = %v, want context.Canceled naming the image", err)
	}
	testkit.WaitFor(t, 5*time.Second, func() (bool, string) {
		n := f.pullsGone.Load()
		return n == 1, fmt.Sprintf("f.pullsGone = %d, want 1", n)
	})
	waitNoGoroutine(t, "runtime.(*Docker).doPull")

	// The next caller starts afresh.
	next, cancelNext := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelNext()
	_ = d.EnsureImage(next, ref, PullAlways)
	if n := f.pulls.Load(); n != 2 {
		t.Errorf("%d pull requests, want a second one after the first was cancelled", n)
	}
	testkit.WaitFor(t, 5*time.Second, func() (bool, string) {
		n := f.pullsGone.Load()
		return n == 2, fmt.Sprintf("f.pullsGone = %d, want 2", n)
	})
}

// waitNoGoroutine waits until no goroutine runs a function named by one of
// the patterns.
func waitNoGoroutine(t *testing.T, patterns ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:goruntime.Stack(buf, true)])
		leaked := ""
		for _, p := range patterns {
			if strings.Contains(stacks, p) {
				leaked = p
			}
		}
		if leaked == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutine running %s leaked:\n%s", leaked, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveEngineIdentity answers what New reads of every engine (its version
// and info) as Docker 20.10 would, and reports whether path was one of
// them.
func serveEngineIdentity(w http.ResponseWriter, path string) bool {
	switch path {
	case "/version":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"Version":"20.10.24","ApiVersion":"1.41","Components":[{"Name":"Engine","Version":"20.10.24"}]}`)
	case "/info":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"Driver":"overlay2","CgroupDriver":"cgroupfs"}`)
	default:
		return false
	}
	return true
}
