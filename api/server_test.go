package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// fakeSyncer is the reconciler as the API sees it.
type fakeSyncer struct {
	mu      gosync.Mutex
	report  hsync.Report
	healthy func(window time.Duration) bool
}

func (f *fakeSyncer) Report() hsync.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.report
}

func (f *fakeSyncer) Healthy(window time.Duration) bool {
	if f.healthy == nil {
		return true
	}
	return f.healthy(window)
}

const token = "t0ken-for-tests"

var testNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// sampleReport is one running pod and one rejected manifest.
func sampleReport() hsync.Report {
	return hsync.Report{
		LastSync: hsync.SyncInfo{Start: testNow.Add(-time.Second), DurMs: 12},
		Pods: []hsync.PodStatus{{
			ID: "web", Source: "fleet", Revision: "3f2a9c1", Phase: hsync.PhaseRunning,
			Containers: []hsync.ContainerStatus{{Name: "app", Image: "demo:1", Hash: "v1:abc", State: "running", ContainerID: "c0ffee"}},
		}},
		Rejected: []validate.Rejection{{ID: "api", Source: "local", Reasons: []string{"host port 8080/TCP already bound by pod web (fleet)"}}},
	}
}

func newServer(t *testing.T, opts api.Options, s api.Syncer) *api.Server {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(testNow)
	}
	src := func() []sources.Status {
		return []sources.Status{{Name: "fleet", Type: "git", Revision: "3f2a9c1", LastSuccess: testNow, Manifests: 2}}
	}
	return api.New(opts, s, src, eventlog.NewLog(10), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// do runs one request against h and returns the recorded response. The
// request names the host as a local client does (Host: 127.0.0.1:10260),
// unless header sets Host.
func do(h http.Handler, method, path string, header http.Header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:10260"
	for k, vs := range header {
		if k == "Host" {
			req.Host = vs[0]
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// jsonError checks that rec is a JSON error body with the given status and
// returns its message.
func jsonError(t *testing.T, rec *httptest.ResponseRecorder, code int) string {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("status %d, want %d; body %s", rec.Code, code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("status %d: Content-Type %q, want application/json; body %q", code, ct, rec.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("status %d: body is not JSON: %v\n%s", code, err, rec.Body)
	}
	msg, ok := body["error"].(string)
	if !ok || msg == "" || len(body) != 1 {
		t.Errorf("status %d: body %s, want {\"error\": \"...\"} only", code, rec.Body)
	}
	return msg
}

// TestHealthz: 200 while the syncer says the loop is alive within the
// configured window, 503 (JSON) once it is stale, 200 again after it
// recovers. /healthz needs no token even on a non-loopback address.
func TestHealthz(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	var gotWindow atomic.Int64
	s := &fakeSyncer{report: sampleReport(), healthy: func(w time.Duration) bool {
		gotWindow.Store(int64(w))
		return healthy.Load()
	}}
	for _, loopback := range []bool{true, false} {
		srv := newServer(t, api.Options{Token: token, Loopback: loopback, HealthWindow: 90 * time.Second}, s)
		healthy.Store(true)
		rec := do(srv, http.MethodGet, "/healthz", nil, "")
		if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
			t.Errorf("loopback=%v: healthy loop: %d %q, want 200 \"ok\\n\"", loopback, rec.Code, rec.Body)
		}
		if w := time.Duration(gotWindow.Load()); w != 90*time.Second {
			t.Errorf("Healthy asked with window %s, want the configured 1m30s", w)
		}
		healthy.Store(false)
		msg := jsonError(t, do(srv, http.MethodGet, "/healthz", nil, ""), http.StatusServiceUnavailable)
		if !strings.Contains(msg, "1m30s") {
			t.Errorf("503 message %q does not name the window", msg)
		}
		healthy.Store(true)
		if rec := do(srv, http.MethodGet, "/healthz", nil, ""); rec.Code != http.StatusOK {
			t.Errorf("loopback=%v: after recovery: %d, want 200", loopback, rec.Code)
		}
	}
}

// TestReadGuard: on a loopback listener the GET endpoints are open; on any
// other address every endpoint but /healthz needs the bearer token, also
// endpoints added with HandleRead.
func TestReadGuard(t *testing.T) {
	s := &fakeSyncer{report: sampleReport()}
	extra := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("extra")) })
	paths := []string{"/status", "/events", "/extra", "/pods/web", "/stats", "/stats/web/app"}
	newSrv := func(loopback bool, tok string) *api.Server {
		srv := newServer(t, api.Options{Token: tok, Loopback: loopback, HealthWindow: time.Minute}, s)
		srv.HandleRead("GET /extra", extra)
		srv.HandlePods(fakeInspector{})
		srv.HandleStats(fakeStats{}, nil)
		return srv
	}
	t.Run("loopback: open", func(t *testing.T) {
		srv := newSrv(true, token)
		for _, p := range paths {
			if rec := do(srv, http.MethodGet, p, nil, ""); rec.Code != http.StatusOK {
				t.Errorf("GET %s without a token on loopback: %d %s, want 200", p, rec.Code, rec.Body)
			}
		}
	})
	t.Run("non-loopback: token required", func(t *testing.T) {
		srv := newSrv(false, token)
		for _, p := range paths {
			jsonError(t, do(srv, http.MethodGet, p, nil, ""), http.StatusUnauthorized)
			jsonError(t, do(srv, http.MethodGet, p, bearer("wrong"), ""), http.StatusUnauthorized)
			jsonError(t, do(srv, http.MethodGet, p, http.Header{"Authorization": {token}}, ""), http.StatusUnauthorized)
			if rec := do(srv, http.MethodGet, p, bearer(token), ""); rec.Code != http.StatusOK {
				t.Errorf("GET %s with the token: %d %s, want 200", p, rec.Code, rec.Body)
			}
		}
		if rec := do(srv, http.MethodGet, "/healthz", nil, ""); rec.Code != http.StatusOK {
			t.Errorf("GET /healthz without a token: %d, want 200", rec.Code)
		}
		rec := do(srv, http.MethodGet, "/status", bearer(token), "")
		var doc api.Document
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Pods) != 1 || doc.Pods[0].ID != "web" {
			t.Errorf("GET /status with the token: %v %s", err, rec.Body)
		}
	})
	t.Run("non-loopback, no token configured: closed", func(t *testing.T) {
		srv := newSrv(false, "")
		for _, p := range paths {
			jsonError(t, do(srv, http.MethodGet, p, nil, ""), http.StatusUnauthorized)
			jsonError(t, do(srv, http.MethodGet, p, bearer(""), ""), http.StatusUnauthorized)
		}
		if rec := do(srv, http.MethodGet, "/healthz", nil, ""); rec.Code != http.StatusOK {
			t.Errorf("GET /healthz: %d, want 200", rec.Code)
		}
	})
}

// TestBearerScheme: the auth scheme is case-insensitive (RFC 7235 §2.1),
// the token itself is not.
func TestBearerScheme(t *testing.T) {
	srv := newServer(t, api.Options{Token: token, Loopback: false}, &fakeSyncer{report: sampleReport()})
	for _, h := range []string{"Bearer " + token, "bearer " + token, "BEARER " + token} {
		if rec := do(srv, http.MethodGet, "/status", http.Header{"Authorization": {h}}, ""); rec.Code != http.StatusOK {
			t.Errorf("Authorization %q: %d, want 200", h, rec.Code)
		}
	}
	for _, h := range []string{"Bearer " + strings.ToUpper(token), "Bearer  " + token, "Basic " + token, "Bearer", "Bearer" + token, ""} {
		jsonError(t, do(srv, http.MethodGet, "/status", http.Header{"Authorization": {h}}, ""), http.StatusUnauthorized)
	}
}

func sign(key, body string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// TestSyncEndpoint: POST /sync takes the bearer token or a valid
// X-Hub-Signature-256 of the body; anything else is 401 and triggers
// nothing. Without a token configured the endpoint does not exist.
func TestSyncEndpoint(t *testing.T) {
	body := `{"ref":"refs/heads/main","after":"3f2a9c1"}`
	tests := []struct {
		name   string
		header http.Header
		body   string
		code   int
	}{
		{name: "no token", body: body, code: 401},
		{name: "wrong token", header: bearer("guess"), body: body, code: 401},
		{name: "token", header: bearer(token), body: body, code: 202},
		{name: "valid signature", header: http.Header{"X-Hub-Signature-256": {sign(token, body)}}, body: body, code: 202},
		{name: "valid signature, empty body", header: http.Header{"X-Hub-Signature-256": {sign(token, "")}}, code: 202},
		{name: "signature with another key", header: http.Header{"X-Hub-Signature-256": {sign("other", body)}}, body: body, code: 401},
		{name: "signature of another body", header: http.Header{"X-Hub-Signature-256": {sign(token, body+" ")}}, body: body, code: 401},
		{name: "signature without sha256= prefix", header: http.Header{"X-Hub-Signature-256": {strings.TrimPrefix(sign(token, body), "sha256=")}}, body: body, code: 401},
		{name: "signature not hex", header: http.Header{"X-Hub-Signature-256": {"sha256=zz"}}, body: body, code: 401},
		{name: "truncated signature", header: http.Header{"X-Hub-Signature-256": {sign(token, body)[:40]}}, body: body, code: 401},
		{name: "sha1 signature header", header: http.Header{"X-Hub-Signature": {"sha1=" + strings.Repeat("0", 40)}}, body: body, code: 401},
		{name: "body over 1 MiB", header: bearer(token), body: strings.Repeat("x", api.MaxSyncBody+1), code: 413},
	}
	var triggered atomic.Int32
	srv := newServer(t, api.Options{Token: token, Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.HandleSync(func(bool) { triggered.Add(1) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := triggered.Load()
			rec := do(srv, http.MethodPost, "/sync", tt.header, tt.body)
			if tt.code != http.StatusAccepted {
				jsonError(t, rec, tt.code)
				if n := triggered.Load() - before; n != 0 {
					t.Errorf("a refused POST /sync triggered %d syncs", n)
				}
				return
			}
			if rec.Code != tt.code {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tt.code)
			}
			if n := triggered.Load() - before; n != 1 {
				t.Errorf("an accepted POST /sync triggered %d syncs, want 1", n)
			}
		})
	}

	t.Run("no token configured: 404", func(t *testing.T) {
		srv := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
		srv.HandleSync(func(bool) { t.Error("triggered without a token configured") })
		for _, h := range []http.Header{nil, bearer(""), {"X-Hub-Signature-256": {sign("", body)}}} {
			jsonError(t, do(srv, http.MethodPost, "/sync", h, body), http.StatusNotFound)
		}
	})
}

// TestJSONErrors: every error the API answers with is a JSON object
// {"error": "..."} with a JSON content type — also the mux's own 404 and
// 405, which clients parse the same way.
func TestJSONErrors(t *testing.T) {
	s := &fakeSyncer{report: sampleReport(), healthy: func(time.Duration) bool { return false }}
	srv := newServer(t, api.Options{Token: token, Loopback: false, HealthWindow: time.Minute}, s)
	srv.HandlePods(fakeInspector{err: errors.New("engine said no")})
	srv.HandleStats(fakeStats{err: errors.New("engine said no")}, nil)
	srv.HandleSync(func(bool) {})
	tests := []struct {
		method, path string
		header       http.Header
		code         int
		want         string
	}{
		{method: "GET", path: "/healthz", code: 503, want: "sync loop"},
		{method: "GET", path: "/status", code: 401, want: "token"},
		{method: "GET", path: "/pods/nope", header: bearer(token), code: 404, want: "nope"},
		{method: "GET", path: "/pods/web", header: bearer(token), code: 502, want: "engine said no"},
		{method: "GET", path: "/stats/web/nope", header: bearer(token), code: 404, want: "nope"},
		{method: "GET", path: "/stats/nope/app", header: bearer(token), code: 404, want: "nope"},
		{method: "GET", path: "/stats/web/app", header: bearer(token), code: 502, want: "engine said no"},
		{method: "POST", path: "/sync", code: 401, want: "token"},
		{method: "GET", path: "/no-such-endpoint", header: bearer(token), code: 404},
		{method: "DELETE", path: "/status", header: bearer(token), code: 405},
		{method: "GET", path: "/sync", header: bearer(token), code: 405},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			msg := jsonError(t, do(srv, tt.method, tt.path, tt.header, ""), tt.code)
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not mention %q", msg, tt.want)
			}
		})
	}
}

// TestDocument: /status is the syncer's report plus host, version, time,
// machine and sources; empty lists are [] (never null).
func TestDocument(t *testing.T) {
	srv := newServer(t, api.Options{Hostname: "h1", Version: "v9", Loopback: true, Machine: api.Machine{Cores: 3, MemoryBytes: 1 << 30}}, &fakeSyncer{report: sampleReport()})
	rec := do(srv, http.MethodGet, "/status", nil, "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /status: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc api.Document
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Hostname != "h1" || doc.Version != "v9" || !doc.Time.Equal(testNow) || doc.Machine.Cores != 3 || doc.Machine.MemoryBytes != 1<<30 {
		t.Errorf("document head %+v", doc)
	}
	if len(doc.Pods) != 1 || doc.Pods[0].ID != "web" || doc.Pods[0].Phase != "Running" || doc.Pods[0].Revision != "3f2a9c1" {
		t.Errorf("pods %+v", doc.Pods)
	}
	if len(doc.Rejected) != 1 || doc.Rejected[0].ID != "api" || len(doc.Rejected[0].Reasons) != 1 {
		t.Errorf("rejected %+v", doc.Rejected)
	}
	if len(doc.Sources) != 1 || doc.Sources[0].Name != "fleet" || !doc.Sources[0].LastSuccess.Equal(testNow) {
		t.Errorf("sources %+v", doc.Sources)
	}
	if doc.LastSync.DurMs != 12 {
		t.Errorf("lastSync %+v", doc.LastSync)
	}

	// Nothing at all: every list is [], not null.
	empty := api.New(api.Options{Loopback: true}, &fakeSyncer{report: hsync.Report{Pods: []hsync.PodStatus{}, Rejected: []validate.Rejection{}}}, nil, eventlog.NewLog(1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, p := range []string{"/status", "/events"} {
		rec := do(empty, http.MethodGet, p, nil, "")
		if bytes.Contains(rec.Body.Bytes(), []byte("null")) {
			t.Errorf("GET %s with nothing to report has a null: %s", p, rec.Body)
		}
	}
}

// TestEvents: /events is a JSON array of the ring buffer, newest last.
func TestEvents(t *testing.T) {
	ev := eventlog.NewLog(2)
	srv := api.New(api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()}, nil, ev, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i, typ := range []string{eventlog.Create, eventlog.Start, eventlog.Restart} {
		ev.Record(eventlog.Event{Time: testNow.Add(time.Duration(i) * time.Second), Type: typ, Pod: "web"})
	}
	rec := do(srv, http.MethodGet, "/events", nil, "")
	var got []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, rec.Body)
	}
	if len(got) != 2 || got[0]["type"] != "start" || got[1]["type"] != "restart" {
		t.Errorf("events %v, want the last two, newest last", got)
	}
	if _, ok := got[0]["Seq"]; ok {
		t.Errorf("event carries its internal sequence number: %v", got[0])
	}
	if tm, _ := got[1]["time"].(string); tm != "2025-03-04T05:06:09Z" {
		t.Errorf("event time %q, want RFC 3339", tm)
	}
}

type fakeInspector struct{ err error }

func (f fakeInspector) Inspect(_ context.Context, id string) (hruntime.Details, error) {
	if f.err != nil {
		return hruntime.Details{}, f.err
	}
	return hruntime.Details{ID: id, Name: "hostlet_web_app", Env: []string{"SECRET=hunter2", "EMPTY=", "NOVALUE", "EQ=a=b"}}, nil
}

type fakeStats struct{ err error }

func (f fakeStats) Stats(context.Context, string) (hruntime.Stats, error) {
	if f.err != nil {
		return hruntime.Stats{}, f.err
	}
	return hruntime.Stats{MemoryWorkingSetBytes: 42 << 20, CPUUsageSeconds: 1.5}, nil
}

// TestPodsRedactsEnv: /pods/{id} shows the engine's env names with values
// hashed with the host's key (the status's hasher), never the values.
func TestPodsRedactsEnv(t *testing.T) {
	rep := sampleReport()
	h := hsync.NewEnvHasher([]byte("0123456789abcdef0123456789abcdef"))
	m := manifest.Manifest{Version: "v1beta1", ID: "web", Containers: []manifest.Container{{Name: "app", Image: "demo:1", Env: []manifest.EnvVar{{Name: "SECRET", Value: h.Hash("SECRET", "hunter2")}}}}}
	rep.Pods[0].Manifest = &m
	srv := newServer(t, api.Options{Loopback: true, EnvHasher: h}, &fakeSyncer{report: rep})
	srv.HandlePods(fakeInspector{})
	rec := do(srv, http.MethodGet, "/pods/web", nil, "")
	if rec.Code != 200 {
		t.Fatalf("GET /pods/web: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "hunter2") || strings.Contains(rec.Body.String(), "a=b") {
		t.Errorf("GET /pods/web shows an env value:\n%s", rec.Body)
	}
	var doc api.PodDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Engine) != 1 || doc.Engine[0].ID != "c0ffee" || doc.ID != "web" {
		t.Fatalf("pod doc %+v", doc)
	}
	want := []string{"SECRET=" + h.Hash("SECRET", "hunter2"), "EMPTY=" + h.Hash("EMPTY", ""), "NOVALUE=" + h.Hash("NOVALUE", ""), "EQ=" + h.Hash("EQ", "a=b")}
	if strings.Join(doc.Engine[0].Env, " ") != strings.Join(want, " ") {
		t.Errorf("env %q, want %q", doc.Engine[0].Env, want)
	}
}

// TestStatsEndpoints: /stats is the machine, /stats/{pod}/{container} the
// container's usage from the engine.
func TestStatsEndpoints(t *testing.T) {
	srv := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.HandleStats(fakeStats{}, nil)
	var ms api.MachineStats
	rec := do(srv, http.MethodGet, "/stats", nil, "")
	if err := json.Unmarshal(rec.Body.Bytes(), &ms); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	if ms.Cores < 1 || ms.MemoryBytes == 0 || ms.MemoryAvailableBytes == 0 || ms.MemoryAvailableBytes > ms.MemoryBytes || ms.Pods != 1 || ms.Containers != 1 {
		t.Errorf("machine stats %+v", ms)
	}
	var cs api.ContainerStatsDoc
	rec = do(srv, http.MethodGet, "/stats/web/app", nil, "")
	if err := json.Unmarshal(rec.Body.Bytes(), &cs); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	if cs.Pod != "web" || cs.Container != "app" || cs.ContainerID != "c0ffee" || cs.MemoryWorkingSetBytes != 42<<20 || cs.CPUUsageSeconds != 1.5 {
		t.Errorf("container stats %+v", cs)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:10260": true, "127.1.2.3:1": true, "[::1]:10260": true, "localhost:10260": true,
		":10260": false, "0.0.0.0:10260": false, "[::]:10260": false, "10.0.0.1:10260": false,
		"example.org:10260": false, "127.0.0.1": false, "": false,
	} {
		if got := api.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestHTTPServerLimits: the server has a header timeout (slowloris), read,
// write and idle timeouts and a header size limit.
func TestHTTPServerLimits(t *testing.T) {
	hs := newServer(t, api.Options{}, &fakeSyncer{}).HTTPServer("127.0.0.1:0")
	if hs.ReadHeaderTimeout != 5*time.Second || hs.ReadTimeout <= 0 || hs.WriteTimeout <= 0 || hs.IdleTimeout <= 0 || hs.MaxHeaderBytes <= 0 || hs.MaxHeaderBytes > 1<<20 {
		t.Errorf("server limits: header %s, read %s, write %s, idle %s, max header %d", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout, hs.MaxHeaderBytes)
	}
}
