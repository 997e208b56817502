package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/notify/chatwire"
	"github.com/hostlet/hostlet/internal/testkit"
)

// wait is how long a test waits for a condition.
const wait = 10 * time.Second

// TestMain removes the helper built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the hostlet-notify helper built for the package's tests.
var built struct {
	once gosync.Once
	dir  string
	path string
	err  error
}

// helper builds cmd/hostlet-notify, once for the package's tests (the
// build cache makes it quick after the first time), and returns its path.
func helper(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			built.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		mod := strings.TrimSpace(string(gomod))
		if mod == "" || mod == os.DevNull {
			built.err = errors.New("not inside a module")
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "notify-helper-"); built.err != nil {
			return
		}
		path := filepath.Join(built.dir, chatwire.HelperName)
		cmd := exec.Command("go", "build", "-trimpath", "-o", path, "./cmd/hostlet-notify")
		cmd.Dir = filepath.Dir(mod)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/hostlet-notify: %w\n%s", err, out)
			return
		}
		built.path = path
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// request is one request a receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server on 127.0.0.1 that records the requests
// it gets and answers each with the status answer returns (200 when nil).
type receiver struct {
	srv    *httptest.Server
	answer func(n int) int // n: the request's number, from 1

	mu   gosync.Mutex
	reqs []request
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, request{header: req.Header.Clone(), body: body})
		n := len(r.reqs)
		r.mu.Unlock()
		code := http.StatusOK
		if r.answer != nil {
			code = r.answer(n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// requests returns the requests received so far.
func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

// notifications decodes the bodies received so far.
func (r *receiver) notifications(t *testing.T) []Notification {
	t.Helper()
	var out []Notification
	for _, req := range r.requests() {
		var n Notification
		if err := json.Unmarshal(req.body, &n); err != nil {
			t.Fatalf("body %q: %v", req.body, err)
		}
		out = append(out, n)
	}
	return out
}

// waitPod waits until r has received a notification of pod and returns
// every notification received.
func (r *receiver) waitPod(t *testing.T, pod string) []Notification {
	t.Helper()
	var got []Notification
	testkit.WaitFor(t, wait, func() (bool, string) {
		got = r.notifications(t)
		for _, n := range got {
			if n.Pod == pod {
				return true, ""
			}
		}
		return false, "no notification of pod " + pod + " received"
	})
	return got
}

// start makes a Notifier of targets and runs it on ev until the test
// ends; the returned function stops it and waits for Run to return.
func start(t *testing.T, ev *eventlog.Log, targets []config.Notify, opts Options) (*Notifier, func()) {
	t.Helper()
	n, err := New(targets, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(ctx, ev)
	}()
	select {
	case <-n.Ready():
	case <-time.After(wait):
		t.Fatalf("Run did not subscribe within %s", wait)
	}
	var once gosync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				t.Errorf("Run did not return within %s of its context's end", wait)
			}
		})
	}
	t.Cleanup(stop)
	return n, stop
}

// stat returns the Stat of target name.
func stat(t *testing.T, n *Notifier, name string) Stat {
	t.Helper()
	for _, s := range n.Stats() {
		if s.Target == name {
			return s
		}
	}
	t.Fatalf("no target %q in %+v", name, n.Stats())
	return Stat{}
}

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// logBuffer is a logger writing to a buffer the test reads.
type logBuffer struct {
	mu  gosync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitStat waits until target name's Stat satisfies ok and returns it.
func waitStat(t *testing.T, n *Notifier, name string, ok func(Stat) bool) Stat {
	t.Helper()
	var s Stat
	testkit.WaitFor(t, wait, func() (bool, string) {
		s = stat(t, n, name)
		return ok(s), fmt.Sprintf("target %s: %+v", name, s)
	})
	return s
}
