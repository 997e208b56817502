package api_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/validate"
)

// bodyMeter counts what handlers read of request bodies.
type bodyMeter struct {
	read    atomic.Int64 // bytes read, all requests together
	readers atomic.Int32 // requests whose body was read from at least once
}

// wrap gives every request h serves a metered body.
func (m *bodyMeter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &meteredBody{ReadCloser: r.Body, m: m}
		h.ServeHTTP(w, r)
	})
}

type meteredBody struct {
	io.ReadCloser
	m       *bodyMeter
	started bool
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.m.readers.Add(1)
	}
	n, err := b.ReadCloser.Read(p)
	b.m.read.Add(int64(n))
	return n, err
}

// serve runs h on a loopback listener with the limits of
// srv.HTTPServer and returns the address; the server is closed at the end
// of the test.
func serve(t *testing.T, srv *api.Server, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String())
	hs.Handler = h
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
	})
	return ln.Addr().String()
}

// heldPost is one raw POST whose body is sent in part, the rest held back
// until release is closed.
type heldPost struct {
	status atomic.Int32 // the response's status; -1 when reading it failed; 0 while none
}

// framing of a held body.
const (
	contentLength = "content-length"
	chunked       = "chunked"
)

// openHeldPost dials addr and sends POST /sync with the extra header lines
// and the first `first` bytes of a body of `size` bytes (declared with
// Content-Length, or chunked), and sends the rest once release is closed.
// Its goroutines end with the test.
func openHeldPost(t *testing.T, wg *gosync.WaitGroup, addr, header, framing string, size, first int, release <-chan struct{}) *heldPost {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	hp := &heldPost{}
	chunk := []byte(strings.Repeat("x", 32<<10))
	send := func(n int) error {
		for n > 0 {
			k := min(n, len(chunk))
			var err error
			if framing == chunked {
				_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", k, chunk[:k])
			} else {
				_, err = conn.Write(chunk[:k])
			}
			if err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		frame := fmt.Sprintf("Content-Length: %d\r\n", size)
		if framing == chunked {
			frame = "Transfer-Encoding: chunked\r\n"
		}
		if _, err := fmt.Fprintf(conn, "POST /sync HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s%s\r\n", addr, frame, header); err != nil {
			return
		}
		if send(first) != nil {
			return
		}
		<-release
		if send(size-first) != nil {
			return
		}
		if framing == chunked {
			_, _ = io.WriteString(conn, "0\r\n\r\n")
		}
	}()
	go func() {
		defer wg.Done()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			hp.status.Store(-1)
			return
		}
		_ = resp.Body.Close()
		hp.status.Store(int32(resp.StatusCode))
	}()
	return hp
}

// TestSyncFloodUnauthenticated is finding 5 of issue 12: 300 concurrent
// unauthenticated POST /sync with large bodies pinned 376 MB, as every
// one of them was read (up to 1 MiB) before its signature was checked.
// Now a request with neither the bearer token nor a well-formed
// signature is refused before its body is read; one with a signature is
// read only while one of DefaultWebhookConcurrency slots is free (else
// 503), at most MaxSyncBody bytes, streamed into the MAC. Asserted on
// the bytes handlers read (not on timing or heap figures, which are only
// logged): at most slots × (MaxSyncBody+1) of all 300 bodies. A
// bearer request is served while the slots are taken, and a signed
// webhook once they are free.
func TestSyncFloodUnauthenticated(t *testing.T) {
	const (
		conns = 300
		first = 64 << 10
	)
	zeroSig := "X-Hub-Signature-256: sha256=" + strings.Repeat("0", 64) + "\r\n"
	slots := api.DefaultWebhookConcurrency
	tests := []struct {
		name, header, framing string
		size                  int
		// readers: how many bodies may be read from at once; refused:
		// the status of the others, at once; last: the status of the
		// read ones once their body is sent.
		readers       int
		refused, last int
	}{
		{name: "no credentials", framing: contentLength, size: 1 << 20, refused: 401},
		{name: "wrong bearer", header: "Authorization: Bearer guess\r\n", framing: contentLength, size: 1 << 20, refused: 401},
		{name: "malformed signature", header: "X-Hub-Signature-256: sha256=zz\r\n", framing: contentLength, size: 1 << 20, refused: 401},
		{name: "signature, declared body over the limit", header: zeroSig, framing: contentLength, size: 2 << 20, refused: 413},
		{name: "wrong signature, body under the limit", header: zeroSig, framing: contentLength, size: api.MaxSyncBody - 1, readers: slots, refused: 503, last: 401},
		{name: "wrong signature, chunked body over the limit", header: zeroSig, framing: chunked, size: 2 << 20, readers: slots, refused: 503, last: 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var triggered atomic.Int32
			srv := newServer(t, api.Options{Token: token, Loopback: true, WebhookReadTimeout: 2 * time.Minute}, &fakeSyncer{report: sampleReport()})
			srv.HandleSync(func(bool) { triggered.Add(1) })
			var meter bodyMeter
			addr := serve(t, srv, meter.wrap(srv))

			var before goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)

			release := make(chan struct{})
			var wg gosync.WaitGroup
			t.Cleanup(wg.Wait)
			var once gosync.Once
			releaseAll := func() { once.Do(func() { close(release) }) }
			t.Cleanup(releaseAll)
			posts := make([]*heldPost, conns)
			for i := range posts {
				posts[i] = openHeldPost(t, &wg, addr, tt.header, tt.framing, tt.size, first, release)
			}
			answered := func() (n int, codes map[int32]int) {
				codes = map[int32]int{}
				for _, p := range posts {
					if c := p.status.Load(); c != 0 {
						n++
						codes[c]++
					}
				}
				return n, codes
			}
			testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
				n, codes := answered()
				r := int(meter.readers.Load())
				return n+r >= conns, fmt.Sprintf("%d answered %v, %d being read", n, codes, r)
			})
			var peak goruntime.MemStats
			goruntime.ReadMemStats(&peak)
			n, codes := answered()
			r := int(meter.readers.Load())
			t.Logf("held: %d answered %v, %d bodies being read, %d bytes read, heap %+d KiB", n, codes, r, meter.read.Load(), (int64(peak.HeapAlloc)-int64(before.HeapAlloc))>>10)
			if r > tt.readers {
				t.Errorf("%d unauthenticated bodies read at once, want at most %d", r, tt.readers)
			}
			if codes[int32(tt.refused)] != conns-tt.readers || len(codes) != 1 {
				t.Errorf("answers while held %v, want %d × %d", codes, conns-tt.readers, tt.refused)
			}
			limit := int64(tt.readers) * (api.MaxSyncBody + 1)
			if got := meter.read.Load(); got > limit {
				t.Errorf("%d bytes read of unauthenticated bodies, want at most %d", got, limit)
			}

			// The bearer token needs no slot. (No body: the meter counts
			// only the unauthenticated ones.)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/sync", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if code := roundTrip(t, req); code != http.StatusAccepted {
				t.Errorf("POST /sync with the token while the flood is held: %d, want 202", code)
			}

			releaseAll()
			testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
				n, codes := answered()
				return n == conns, fmt.Sprintf("%d answered %v", n, codes)
			})
			_, codes = answered()
			if tt.readers > 0 && codes[int32(tt.last)] != tt.readers {
				t.Errorf("answers %v, want %d × %d for the bodies read", codes, tt.readers, tt.last)
			}
			if got := meter.read.Load(); got > limit {
				t.Errorf("%d bytes read of unauthenticated bodies in all, want at most %d", got, limit)
			}

			body := `{"ref":"refs/heads/main"}`
			req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/sync", strings.NewReader(body))
			req.Header.Set("X-Hub-Signature-256", sign(token, body))
			if code := roundTrip(t, req); code != http.StatusAccepted {
				t.Errorf("signed webhook after the flood: %d, want 202", code)
			}
			if n := triggered.Load(); n != 2 {
				t.Errorf("%d syncs triggered, want 2 (the bearer request and the signed webhook)", n)
			}
		})
	}
}

// roundTrip sends req on a fresh connection and returns the status.
func roundTrip(t *testing.T, req *http.Request) int {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookReadDeadline: a signed request whose body stalls is cut at
// the webhook read timeout (408) and gives its slot back.
func TestWebhookReadDeadline(t *testing.T) {
	var triggered atomic.Int32
	srv := newServer(t, api.Options{Token: token, Loopback: true, WebhookReadTimeout: 300 * time.Millisecond}, &fakeSyncer{report: sampleReport()})
	srv.HandleSync(func(bool) { triggered.Add(1) })
	addr := serve(t, srv, srv)

	var wg gosync.WaitGroup
	t.Cleanup(wg.Wait)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var stalled []*heldPost
	for range api.DefaultWebhookConcurrency {
		stalled = append(stalled, openHeldPost(t, &wg, addr, "X-Hub-Signature-256: sha256="+strings.Repeat("0", 64)+"\r\n", contentLength, 1000, 10, release))
	}
	testkit.WaitFor(t, 20*time.Second, func() (bool, string) {
		var codes []int32
		done := true
		for _, p := range stalled {
			c := p.status.Load()
			codes = append(codes, c)
			done = done && c != 0
		}
		return done, fmt.Sprintf("statuses %v", codes)
	})
	for _, p := range stalled {
		if c := p.status.Load(); c != http.StatusRequestTimeout {
			t.Errorf("stalled webhook body: status %d, want 408", c)
		}
	}
	body := `{"ref":"refs/heads/main"}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/sync", strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", sign(token, body))
	if code := roundTrip(t, req); code != http.StatusAccepted {
		t.Errorf("signed webhook after the stalled ones: %d, want 202", code)
	}
	if n := triggered.Load(); n != 1 {
		t.Errorf("%d syncs triggered, want 1", n)
	}
}

// TestSyncSignatureHeader: the X-Hub-Signature-256 value must be
// "sha256=" and 64 hex digits, else 401 before the body is read.
func TestSyncSignatureHeader(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	good := sign(token, body)
	tests := []struct {
		name, sig string
		code      int
		read      bool
	}{
		{name: "valid", sig: good, code: 202, read: true},
		{name: "valid, upper-case hex", sig: "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), code: 202, read: true},
		{name: "wrong MAC", sig: "sha256=" + strings.Repeat("ab", 32), code: 401, read: true},
		{name: "empty", sig: "", code: 401},
		{name: "prefix only", sig: "sha256=", code: 401},
		{name: "short", sig: good[:len(good)-2], code: 401},
		{name: "long", sig: good + "00", code: 401},
		{name: "not hex", sig: "sha256=" + strings.Repeat("g", 64), code: 401},
		{name: "sha1", sig: "sha1=" + strings.Repeat("0", 40), code: 401},
		{name: "upper-case prefix", sig: "SHA256=" + strings.TrimPrefix(good, "sha256="), code: 401},
		{name: "space", sig: " " + good, code: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
			srv.HandleSync(func(bool) {})
			var meter bodyMeter
			rec := do(meter.wrap(srv), http.MethodPost, "/sync", http.Header{"X-Hub-Signature-256": {tt.sig}}, body)
			if rec.Code != tt.code {
				t.Errorf("status %d %s, want %d", rec.Code, rec.Body, tt.code)
			}
			if read := meter.readers.Load() > 0; read != tt.read {
				t.Errorf("body read: %v, want %v", read, tt.read)
			}
		})
	}
}

// TestReadGuardHost is finding 10 of issue 12: on a loopback listener the
// GET endpoints were open whatever the Host header said, so a page whose
// name was rebound to 127.0.0.1 (DNS rebinding), or a reverse proxy in
// front of hostlet, read /status, /pods and the rest without the token.
// They are open only for a loopback Host and no proxy's forwarding
// header; otherwise the token is needed. /healthz stays open.
func TestReadGuardHost(t *testing.T) {
	rep := sampleReport()
	s := &fakeSyncer{report: rep}
	srv := newServer(t, api.Options{Token: token, Loopback: true, HealthWindow: time.Minute}, s)
	srv.HandlePods(fakeInspector{})
	srv.HandleStats(fakeStats{}, nil)
	met := metrics.New("v", "c", s.Report, func() []sources.Status { return nil })
	srv.HandleRead("GET /metrics", met.Handler())
	paths := []string{"/status", "/events", "/pods/web", "/stats", "/stats/web/app", "/metrics"}

	tests := []struct {
		name   string
		header http.Header
		open   bool
	}{
		{name: "127.0.0.1 with port", header: http.Header{"Host": {"127.0.0.1:10260"}}, open: true},
		{name: "127.0.0.1", header: http.Header{"Host": {"127.0.0.1"}}, open: true},
		{name: "127.1.2.3", header: http.Header{"Host": {"127.1.2.3:1"}}, open: true},
		{name: "localhost", header: http.Header{"Host": {"localhost:10260"}}, open: true},
		{name: "LOCALHOST", header: http.Header{"Host": {"LOCALHOST"}}, open: true},
		{name: "localhost.", header: http.Header{"Host": {"localhost.:10260"}}, open: true},
		{name: "name under localhost", header: http.Header{"Host": {"hostlet.localhost:10260"}}, open: true},
		{name: "[::1] with port", header: http.Header{"Host": {"[::1]:10260"}}, open: true},
		{name: "[::1]", header: http.Header{"Host": {"[::1]"}}, open: true},
		{name: "IPv4-mapped loopback", header: http.Header{"Host": {"[::ffff:127.0.0.1]:10260"}}, open: true},
		{name: "rebound name", header: http.Header{"Host": {"evil.example"}}},
		{name: "rebound name with port", header: http.Header{"Host": {"evil.example:10260"}}},
		{name: "localhost as a subdomain", header: http.Header{"Host": {"localhost.evil.example"}}},
		{name: "loopback-looking name", header: http.Header{"Host": {"127.0.0.1.nip.io:10260"}}},
		{name: "0.0.0.0", header: http.Header{"Host": {"0.0.0.0:10260"}}},
		{name: "private address", header: http.Header{"Host": {"10.0.0.1:10260"}}},
		{name: "no Host", header: http.Header{"Host": {""}}},
		{name: "X-Forwarded-For", header: http.Header{"Host": {"127.0.0.1:10260"}, "X-Forwarded-For": {"203.0.113.7"}}},
		{name: "X-Forwarded-Host", header: http.Header{"Host": {"127.0.0.1:10260"}, "X-Forwarded-Host": {"hostlet.example"}}},
		{name: "X-Real-IP", header: http.Header{"Host": {"localhost"}, "X-Real-Ip": {"203.0.113.7"}}},
		{name: "Forwarded", header: http.Header{"Host": {"127.0.0.1:10260"}, "Forwarded": {"for=203.0.113.7"}}},
		{name: "Via", header: http.Header{"Host": {"127.0.0.1:10260"}, "Via": {"1.1 proxy"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range paths {
				rec := do(srv, http.MethodGet, p, tt.header, "")
				if tt.open {
					if rec.Code != http.StatusOK {
						t.Errorf("GET %s without a token: %d %s, want 200", p, rec.Code, rec.Body)
					}
					continue
				}
				jsonError(t, rec, http.StatusUnauthorized)
				h := tt.header.Clone()
				h.Set("Authorization", "Bearer "+token)
				if rec := do(srv, http.MethodGet, p, h, ""); rec.Code != http.StatusOK {
					t.Errorf("GET %s with the token: %d %s, want 200", p, rec.Code, rec.Body)
				}
			}
			if rec := do(srv, http.MethodGet, "/healthz", tt.header, ""); rec.Code != http.StatusOK {
				t.Errorf("GET /healthz: %d, want 200", rec.Code)
			}
		})
	}

	// The same over a real loopback connection, as a rebound browser
	// sends it.
	addr := serve(t, srv, srv)
	for host, want := range map[string]int{"evil.example:80": 401, addr: 200} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/pods/web", nil)
		req.Host = host
		if code := roundTrip(t, req); code != want {
			t.Errorf("GET /pods/web over TCP with Host %s: %d, want %d", host, code, want)
		}
	}
}

// TestHandleGuards: endpoints added with Handle are guarded too: a
// non-GET one needs the bearer token before its handler runs (nothing of
// the body is read), a GET one is guarded like /status.
func TestHandleGuards(t *testing.T) {
	srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
	var called atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	srv.Handle("POST /things", h)
	srv.Handle("DELETE /things/{id}", h)
	srv.Handle("GET /things", h)
	var meter bodyMeter
	m := meter.wrap(srv)
	body := strings.Repeat("x", 1<<20)
	for _, req := range []struct{ method, path string }{{method: "POST", path: "/things"}, {method: "DELETE", path: "/things/a"}} {
		jsonError(t, do(m, req.method, req.path, nil, body), http.StatusUnauthorized)
		jsonError(t, do(m, req.method, req.path, bearer("guess"), body), http.StatusUnauthorized)
		if n := called.Load(); n != 0 || meter.read.Load() != 0 {
			t.Fatalf("%s %s without the token: handler called %d times, %d body bytes read", req.method, req.path, n, meter.read.Load())
		}
		if rec := do(m, req.method, req.path, bearer(token), body); rec.Code != http.StatusNoContent {
			t.Errorf("%s %s with the token: %d, want 204", req.method, req.path, rec.Code)
		}
		called.Store(0)
		meter.read.Store(0)
	}
	if rec := do(m, "GET", "/things", nil, ""); rec.Code != http.StatusNoContent {
		t.Errorf("GET /things from loopback: %d, want 204", rec.Code)
	}
	jsonError(t, do(m, "GET", "/things", http.Header{"Host": {"evil.example"}}, ""), http.StatusUnauthorized)
}

// TestPushAuthBeforeBody: POST /manifests checks the bearer token before
// it reads a byte of the body, both in the push source's handler and
// behind the API's guard.
func TestPushAuthBeforeBody(t *testing.T) {
	push := sources.NewPush(config.Source{Name: "push", Type: config.TypePush}, validate.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.Handle("POST /manifests", push.Handler(srv.Authorized))
	body := strings.Repeat("x", sources.MaxPushSize)
	for name, h := range map[string]http.Handler{"api": srv, "push handler": push.Handler(srv.Authorized)} {
		for _, hdr := range []http.Header{nil, bearer("guess"), {"X-Hub-Signature-256": {sign(token, body)}}} {
			var meter bodyMeter
			rec := do(meter.wrap(h), http.MethodPost, "/manifests", hdr, body)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s: POST /manifests with %v: %d, want 401", name, hdr, rec.Code)
			}
			if n := meter.read.Load(); n != 0 {
				t.Errorf("%s: POST /manifests with %v: %d body bytes read before the token was checked", name, hdr, n)
			}
		}
	}
}

// TestIsLoopbackHost: which Host header values name loopback.
func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:10260": true, "127.255.255.254:1": true, "[::1]": true, "[::1]:10260": true,
		"::1": true, "localhost": true, "localhost:1": true, "Localhost.": true, "a.b.localhost:1": true,
		"[::ffff:127.0.0.1]:1": true,
		"":                     false, ":10260": false, "0.0.0.0": false, "[::]:1": false, "128.0.0.1": false, "evil.example": false,
		"localhost.evil.example": false, "localhostx": false, "xlocalhost": false, "127.0.0.1.": false,
		"2130706433": false, "0x7f.1": false, "[fe80::1%lo]:1": false,
	} {
		if got := api.IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
