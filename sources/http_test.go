package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
)

// manifestServer serves a body with an ETag and answers If-None-Match with
// 304; mode switches it into a failure.
type manifestServer struct {
	*httptest.Server
	mu   gosync.Mutex
	body string
	mode string

	requests    atomic.Int64
	ifNoneMatch atomic.Int64
	notModified atomic.Int64
	// bigDone receives the bytes written to each response of the big body.
	bigDone chan int64
}

func etagOf(body string) string {
	sum := sha256.Sum256([]byte(body))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

func newManifestServer(t *testing.T, body string) *manifestServer {
	s := &manifestServer{body: body, bigDone: make(chan int64, 100)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnContext = smallSendBuffer
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// serverSendBuffer is the server's socket send buffer: small, so that what
// the server gets to write past what the client reads is bounded by the
// client's receive buffer alone.
const serverSendBuffer = 128 << 10

func smallSendBuffer(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(serverSendBuffer)
	}
	return ctx
}

func (s *manifestServer) set(body, mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.mode = body, mode
}

func (s *manifestServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	body, mode := s.body, s.mode
	s.mu.Unlock()
	switch mode {
	case "500":
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	case "garbage":
		_, _ = w.Write([]byte("{{{ this is not YAML: [\n\x00\x01"))
		return
	case "not-a-manifest":
		_, _ = w.Write([]byte("hello: world\n"))
		return
	case "big":
		// 50 MiB, streamed without a Content-Length.
		chunk := []byte(strings.Repeat("# padding padding padding padding\n", 1024))
		var n int64
		for n < 50<<20 {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		s.bigDone <- n
		return
	case "slow":
		// Headers at once, then one byte a second.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for i := 0; i < len(body); i++ {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			if _, err := w.Write([]byte{body[i]}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		return
	}
	etag := etagOf(body)
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		s.ifNoneMatch.Add(1)
		if inm == etag {
			s.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write([]byte(body))
}

func httpSource(t *testing.T, url string, interval, timeout time.Duration) *HTTP {
	return NewHTTP(config.Source{Name: "cmdb", Type: config.TypeHTTP, URL: url, Interval: interval, Timeout: timeout}, testLogger(t))
}

func bodyRev(body string) string {
	sum := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

// TestHTTPDeliversAndUsesETag: the set and its revision arrive; later polls
// send If-None-Match, a 304 is answered from the set already decoded (the
// update carries the very same manifests), and a changed body is seen on
// the next poll.
func TestHTTPDeliversAndUsesETag(t *testing.T) {
	body1 := podListYAML("1", "web", "api")
	srv := newManifestServer(t, body1)
	h := startSources(t, MergeOptions{}, httpSource(t, srv.URL, 100*time.Millisecond, 5*time.Second))
	h.waitSet(t, 5*time.Second, []string{"web=1", "api=1"}, bodyRev(body1))
	first, n := h.lastUpdate()

	testkit.WaitFor(t, 5*time.Second, func() (bool, string) {
		_, m := h.lastUpdate()
		return srv.notModified.Load() >= 3 && m >= n+3, fmt.Sprintf("%d requests with If-None-Match, %d answered 304, %d updates", srv.ifNoneMatch.Load(), srv.notModified.Load(), m)
	})
	if got, want := srv.ifNoneMatch.Load(), srv.requests.Load()-1; got < want-1 {
		t.Errorf("%d of %d requests after the first carried If-None-Match", got, want)
	}
	u, _ := h.lastUpdate()
	if u.Err != nil || u.Revision != bodyRev(body1) || len(u.Manifests) != 2 {
		t.Fatalf("update after a 304: %+v, want the same set at revision %s", u, bodyRev(body1))
	}
	if &u.Manifests[0] != &first.Manifests[0] {
		t.Error("the update after a 304 holds freshly decoded manifests; a 304 must not decode anything")
	}

	body2 := podListYAML("2", "web")
	srv.set(body2, "")
	h.waitSet(t, 2*time.Second, []string{"web=2"}, bodyRev(body2))
}

// TestHTTPFailureKeepsLastGoodSet: every failure keeps the last good set,
// reports the error, and the source recovers when the server does.
func TestHTTPFailureKeepsLastGoodSet(t *testing.T) {
	body := podListYAML("1", "web", "api")
	want := []string{"web=1", "api=1"}
	tests := []struct {
		name     string
		mode     string
		timeout  time.Duration
		interval time.Duration
		errLike  string
		within   time.Duration
	}{
		{name: "HTTP 500", mode: "500", errLike: "500 Internal Server Error"},
		{name: "garbage body", mode: "garbage", errLike: "not a text file"},
		{name: "body that is no manifest", mode: "not-a-manifest", errLike: "hello"},
		{name: "connection refused", mode: "refused", errLike: "connection refused"},
		{name: "one byte a second", mode: "slow", timeout: 2 * time.Second, errLike: "Client.Timeout", within: 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newManifestServer(t, body)
			timeout := cmpOr(tt.timeout, 5*time.Second)
			h := startSources(t, MergeOptions{}, httpSource(t, srv.URL, cmpOr(tt.interval, 100*time.Millisecond), timeout))
			h.waitSet(t, 5*time.Second, want, bodyRev(body))
			var relisten func()
			if tt.mode == "refused" {
				addr := srv.Listener.Addr().String()
				srv.Close()
				relisten = func() {
					l, err := net.Listen("tcp", addr)
					if err != nil {
						t.Fatalf("listen again on %s: %v", addr, err)
					}
					srv.Server = httptest.NewUnstartedServer(http.HandlerFunc(srv.serve))
					srv.Config.ConnContext = smallSendBuffer
					srv.Listener.Close()
					srv.Listener = l
					srv.Start()
				}
			} else {
				srv.set(body, tt.mode)
			}
			start := time.Now()
			st := h.waitErr(t, cmpOr(tt.within, 3*time.Second), 0, tt.errLike)
			t.Logf("error after %s: %s", time.Since(start).Round(time.Millisecond), st.Sources[0].Error)
			sameSet(t, st, want, bodyRev(body))
			if relisten != nil {
				relisten()
			}
			srv.set(body, "")
			h.waitSet(t, 5*time.Second, want, bodyRev(body))
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// clientReceiveBuffer reads the receiver's socket buffer size: the
// default, and the maximum autotuning may grow it to.
func clientReceiveBuffer(t *testing.T) (def, max int64) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_rmem")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	def, _ = strconv.ParseInt(f[1], 10, 64)
	max, _ = strconv.ParseInt(f[2], 10, 64)
	return def, max
}

// TestHTTPBigBodyStopsAtLimit: a 50 MiB streamed body is refused once
// 10 MiB are read; the server gets to write little more than that (what the
// socket buffers hold), and the heap never holds anything like 50 MiB.
func TestHTTPBigBodyStopsAtLimit(t *testing.T) {
	body := podListYAML("1", "web")
	srv := newManifestServer(t, body)
	h := startSources(t, MergeOptions{}, httpSource(t, srv.URL, 500*time.Millisecond, 30*time.Second))
	h.waitSet(t, 5*time.Second, []string{"web=1"}, bodyRev(body))

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg gosync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	srv.set(body, "big")
	st := h.waitErr(t, 10*time.Second, 0, "larger than the size limit")
	close(stop)
	wg.Wait()
	sameSet(t, st, []string{"web=1"}, bodyRev(body))

	var written int64
	select {
	case written = <-srv.bigDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server was still writing the big body 10 s after the source gave up")
	}
	// What the server wrote beyond the 10 MiB the source read is what the
	// socket buffers held: the server's send buffer (set small) and the
	// client's receive buffer, which Linux autotunes (tcp_rmem) and which
	// holds a few MiB on loopback. 8 MiB of slack is far from the 40 MiB a
	// source reading the whole body would have taken.
	rdef, rmax := clientReceiveBuffer(t)
	limit := int64(manifest.MaxSize) + 8<<20
	t.Logf("server wrote %.1f MiB of 50 MiB (limit %.1f MiB; tcp_rmem default %d max %d); heap peak %.1f MiB over a base of %.1f MiB",
		float64(written)/(1<<20), float64(limit)/(1<<20), rdef, rmax, float64(peak.Load()-min(base, peak.Load()))/(1<<20), float64(base)/(1<<20))
	if written < manifest.MaxSize {
		t.Errorf("the server wrote only %d bytes; the source gave up before the limit", written)
	}
	if written >= 50<<20 || written > limit {
		t.Errorf("the server wrote %d bytes: the source read past the 10 MiB limit", written)
	}
	// Reading up to the limit costs the limit; a slice grown by copying
	// would cost two to three times that.
	if delta := peak.Load() - min(base, peak.Load()); delta > 16<<20 {
		t.Errorf("heap grew by %.1f MiB while the big body was refused; the body must not be held whole", float64(delta)/(1<<20))
	}
}

// TestHTTPErrorHidesPassword: a URL's credentials (a password, or a token
// used as the user name) never show in the error (it ends up in status,
// events and logs): the whole userinfo is redacted, and the URL is named
// once.
func TestHTTPErrorHidesPassword(t *testing.T) {
	srv := newManifestServer(t, "")
	addr := srv.Listener.Addr().String()
	srv.Close()
	tests := []struct {
		name, userinfo string
		secrets        []string
	}{
		{name: "password", userinfo: "ops:hunter2", secrets: []string{"hunter2", "ops:"}},
		{name: "token as user name", userinfo: "tok-5d1c9a0e", secrets: []string{"tok-5d1c9a0e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startSources(t, MergeOptions{}, httpSource(t, "http://"+tc.userinfo+"@"+addr+"/hosts/h1?x=1", time.Hour, 5*time.Second))
			st := h.waitErr(t, 5*time.Second, 0, "connection refused")
			e := st.Sources[0].Error
			for _, s := range tc.secrets {
				if strings.Contains(e, s) {
					t.Errorf("error %q shows %q", e, s)
				}
			}
			if !strings.Contains(e, "http://REDACTED@"+addr+"/hosts/h1") || strings.Count(e, "/hosts/h1") != 1 {
				t.Errorf("error %q: want the URL once, its userinfo redacted", e)
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	const limit = 200 << 10 // spans several blocks
	tests := []struct {
		name    string
		size    int
		tooBig  bool
		readMax int // the most bytes read from the reader
	}{
		{name: "empty", size: 0},
		{name: "small", size: 10},
		{name: "one block", size: 64 << 10},
		{name: "exactly the limit", size: limit},
		{name: "one byte over", size: limit + 1, tooBig: true, readMax: limit + 1},
		{name: "far over", size: 10 * limit, tooBig: true, readMax: limit + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(strings.Repeat("0123456789abcdef", tt.size/16+1)[:tt.size])
			r := &countingReader{r: strings.NewReader(string(data))}
			got, err := readBody(r, limit)
			if tt.tooBig {
				if !errors.Is(err, manifest.ErrTooLarge) {
					t.Fatalf("err %v, want ErrTooLarge", err)
				}
				if r.n > int64(tt.readMax) {
					t.Errorf("read %d bytes, want at most %d", r.n, tt.readMax)
				}
				return
			}
			if err != nil || string(got) != string(data) {
				t.Fatalf("got %d bytes, err %v; want the %d bytes", len(got), err, len(data))
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestHTTPEveryFailureIsAnUpdate: a source that keeps failing with the same
// error sends an update for every failed poll (so that
// hostlet_source_errors_total counts failures, not distinct messages); the
// merge still reports the one error and keeps the last good set.
func TestHTTPEveryFailureIsAnUpdate(t *testing.T) {
	body := podListYAML("1", "web")
	srv := newManifestServer(t, body)
	h := startSources(t, MergeOptions{}, httpSource(t, srv.URL, 50*time.Millisecond, 5*time.Second))
	h.waitSet(t, 5*time.Second, []string{"web=1"}, bodyRev(body))
	srv.set(body, "500")
	failures := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, u := range h.updates {
			if u.Err != nil {
				n++
			}
		}
		return n
	}
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		n := failures()
		return n >= 3, fmt.Sprintf("%d failed updates after %d requests, want one per failed poll", n, srv.requests.Load())
	})
	st := h.waitErr(t, 5*time.Second, 0, "500")
	if got := ids(st); len(got) != 1 || got[0] != "web=1" {
		t.Errorf("set while failing %v, want the last good [web=1]", got)
	}
}
