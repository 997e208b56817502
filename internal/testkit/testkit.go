// Package testkit holds the helpers that the tests of every package share:
// waiting on a condition with a deadline (never a fixed sleep), one HTTP
// request, waiting for an HTTP answer, and free ports on 127.0.0.1. It is
// imported by tests only.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pollEvery is how often WaitFor asks its condition again.
const pollEvery = 20 * time.Millisecond

// WaitFor asks cond every 20 ms until it returns true, and fails the test
// with cond's last message when timeout passes first or the test's context
// ends.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %s", timeout, msg)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting: %s", msg)
		case <-time.After(pollEvery):
		}
	}
}

// HTTP does one request with a 10 s timeout and returns the status and
// body; a convenience for WaitFor conditions. The bound is for a request
// that will not end, not a measure of speed: an agent under -race on two
// busy cores has taken 4 s to answer /metrics while it read a 7 MB build
// context.
func HTTP(method, url, body string) (int, string, error) {
	return Request(method, url, nil, body, 10*time.Second)
}

// Request does one request with header (may be nil) and body, bounded by
// timeout, and returns the status and body.
func Request(method, url string, header http.Header, body string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	return resp.StatusCode, string(b), nil
}

// WaitHTTP waits until method url (with body) answers 200 with a body
// containing want, and returns that body.
func WaitHTTP(t testing.TB, timeout time.Duration, method, url, body, want string) string {
	t.Helper()
	var got string
	WaitFor(t, timeout, func() (bool, string) {
		code, b, err := HTTP(method, url, body)
		if err != nil {
			return false, err.Error()
		}
		got = b
		return code == 200 && strings.Contains(b, want), fmt.Sprintf("%s %s: %d %q, want 200 with %q", method, url, code, b, want)
	})
	return got
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that it has not returned before in this process. The kernel may hand a
// port out again once its listener is closed, before the test that got it
// first has bound it, so one port is never given twice; another process
// may still take it (a server that must bind it should retry).
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testkit: find a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
	t.Fatal("testkit: no free port not handed out before in 100 tries")
	return 0
}

// handedOut holds the ports FreePort returned in this test process.
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// MountTmpfs mounts a tmpfs of size bytes on dir (created if needed) until
// the test ends: a filesystem the test can fill. It needs root.
func MountTmpfs(t testing.TB, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s (the test needs root): %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// FillDisk writes to dir until its filesystem is full, to the last byte,
// and returns a function that frees the space again.
func FillDisk(t testing.TB, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for n := len(buf); n > 0; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill %s: %v", dir, err)
				}
				break
			}
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
}

// Listen listens on addr ("" for a new port on 127.0.0.1), trying again
// for up to 10 s while the address is taken: the port of a server just
// stopped may take a moment to be free.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(pollEvery)
	}
}
