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
	"math/rand/v2"
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

// FreePort returns a TCP port, free on 127.0.0.1 and on every address a
// moment ago, that no other test process on the machine holds. The port
// comes from below the kernel's ephemeral range, so a port the kernel
// hands out for a listener on port 0 or an outgoing connection never
// meets it, and a lock on a file named after it, held until the process
// ends (the kernel drops it when the process dies, so nothing is left
// stale), keeps the test processes that go test runs side by side, and
// the engine's port allocator fed by them, from being given one port
// twice. Where the range below the ephemeral one is too small, it falls
// back to a port the kernel picks, given once per process.
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if lo, hi, ok := reservableRange(); ok {
		for range 200 {
			port := lo + rand.IntN(hi-lo)
			if handedOut.ports[port] || !bindable(port) {
				continue
			}
			if lock, ok := lockPort(port); ok {
				handedOut.ports[port] = true
				handedOut.locks = append(handedOut.locks, lock)
				return port
			}
		}
	}
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

// handedOut holds the ports FreePort returned in this test process and the
// open lock files that reserve them for as long as it runs.
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
	locks []*os.File
}{ports: map[int]bool{}}

// reservableRange is the range of ports FreePort picks from: from 20000 up
// to the start of the kernel's ephemeral range (32768 by default).
func reservableRange() (lo, hi int, ok bool) {
	const floor = 20000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first < floor+1000 {
		return 0, 0, false
	}
	return floor, first, true
}

// bindable reports whether a TCP listener can bind port on every address
// and on 127.0.0.1 right now.
func bindable(port int) bool {
	for _, addr := range []string{fmt.Sprintf(":%d", port), fmt.Sprintf("127.0.0.1:%d", port)} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// lockPort takes an exclusive lock on the file that stands for port in the
// machine's temporary folder, shared by every test process, and returns
// it open; false when another process holds it or the lock cannot be had.
func lockPort(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "hostlet-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

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
