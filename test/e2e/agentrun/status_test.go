package agentrun_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// ---- helpers of the status tests ----

// tokenFile writes a bearer token into a file and returns both.
func tokenFile(t *testing.T) (path, token string) {
	t.Helper()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	token = "tok-" + hex.EncodeToString(b)
	path = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, token
}

// call does one request with a 10 s timeout and returns status and body.
func call(t *testing.T, method, url string, header http.Header, body string) (int, string) {
	t.Helper()
	code, out, err := tryCall(method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

func tryCall(method, url string, header http.Header, body string) (int, string, error) {
	return testkit.Request(method, url, header, body, 10*time.Second)
}

// getOK does a GET that must answer 200 and returns the body.
func getOK(t *testing.T, url string) string {
	t.Helper()
	code, body := call(t, http.MethodGet, url, nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// logCapture keeps everything the agent logs (at debug level) and copies
// it to the test's output while the test runs.
type logCapture struct {
	mu   gosync.Mutex
	buf  bytes.Buffer
	out  io.Writer
	done bool
}

func captureLog(t *testing.T) (*slog.Logger, *logCapture) {
	c := &logCapture{out: t.Output()}
	t.Cleanup(func() {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug})), c
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if !c.done {
		_, _ = c.out.Write(p)
	}
	return len(p), nil
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// demoPod is a manifest running the demo HTTP server with its port 8080
// published on 127.0.0.1:hostPort; extra lines go under the container.
func (e *env) demoPod(id string, hostPort int, extra string) string {
	return fmt.Sprintf(`version: v1beta1
id: %s
restartPolicy: Always
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
%s`, id, e.image, hostPort, extra)
}

// waitDemo waits until the demo server answers on 127.0.0.1:port.
func waitDemo(t *testing.T, port int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		code, body, err := testkit.HTTP(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), "")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("demo server: %d %s", code, body)
	})
}

// findPod returns the pod id of doc.
func findPod(doc api.Document, id string) (hsync.PodStatus, bool) {
	for _, p := range doc.Pods {
		if p.ID == id {
			return p, true
		}
	}
	return hsync.PodStatus{}, false
}

func findSource(doc api.Document, name string) sources.Status {
	for _, s := range doc.Sources {
		if s.Name == name {
			return s
		}
	}
	return sources.Status{}
}

// phases maps pod id to phase.
func phases(doc api.Document) map[string]string {
	out := map[string]string{}
	for _, p := range doc.Pods {
		out[p.ID] = p.Phase
	}
	return out
}

// ---- Prometheus ----

// scrape reads /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := tryScrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func tryScrape(addr string) (map[string]*dto.MetricFamily, error) {
	code, body, err := tryCall(http.MethodGet, "http://"+addr+"/metrics", nil, "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w\n%s", err, body)
	}
	return mfs, nil
}

// series returns the metrics of family name whose labels include labels.
func series(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for k, v := range labels {
			if have[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// metricValue is the value of the one gauge or counter series of name
// with labels; ok is false when there is not exactly one.
func metricValue(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	ms := series(mfs, name, labels)
	if len(ms) != 1 {
		return 0, false
	}
	switch m := ms[0]; {
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// labelValues lists label of every series of name.
func labelValues(mfs map[string]*dto.MetricFamily, name string, match map[string]string, label string) []string {
	var out []string
	for _, m := range series(mfs, name, match) {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out = append(out, lp.GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

// syncSample is the sync figures of one scrape.
type syncSample struct {
	at    time.Time
	syncs float64 // hostlet_syncs_total
	count uint64  // histogram count
	sum   float64 // histogram sum, seconds
}

func sampleSyncs(t *testing.T, addr string) syncSample {
	t.Helper()
	mfs := scrape(t, addr)
	s := syncSample{at: time.Now()}
	s.syncs, _ = metricValue(mfs, "hostlet_syncs_total", nil)
	if mf := mfs["hostlet_sync_duration_seconds"]; mf != nil && len(mf.GetMetric()) == 1 {
		h := mf.GetMetric()[0].GetHistogram()
		s.count, s.sum = h.GetSampleCount(), h.GetSampleSum()
	}
	return s
}

// syncPace is what watchSyncs saw.
type syncPace struct {
	syncs  int           // syncs counted
	mean   time.Duration // mean duration of those syncs, from the histogram
	maxGap time.Duration // longest time without a new sync
}

// watchSyncs scrapes /metrics every 100 ms until the sync counter moved n
// times (failing after timeout), and returns the syncs' pace and mean
// duration.
func watchSyncs(t *testing.T, addr string, n int, timeout time.Duration) syncPace {
	t.Helper()
	first := sampleSyncs(t, addr)
	last, moves := first, 0
	var maxGap time.Duration
	deadline := time.Now().Add(timeout)
	for moves < n {
		if time.Now().After(deadline) {
			t.Fatalf("the sync counter moved %d times in %s, want %d (it stands at %v)", moves, timeout, n, last.syncs)
		}
		select {
		case <-t.Context().Done():
			t.Fatal("test ended while watching syncs")
		case <-time.After(100 * time.Millisecond):
		}
		s := sampleSyncs(t, addr)
		if s.syncs != last.syncs {
			maxGap = max(maxGap, s.at.Sub(last.at))
			moves++
			last = s
		}
		if s.count != uint64(s.syncs) {
			t.Errorf("histogram count %d != hostlet_syncs_total %v", s.count, s.syncs)
		}
	}
	p := syncPace{syncs: int(last.count - first.count), maxGap: maxGap}
	p.mean = time.Duration((last.sum - first.sum) / float64(p.syncs) * float64(time.Second))
	return p
}

// ---- etcd ----

// etcdGet reads one key; ok is false when it is absent.
func etcdGet(t *testing.T, cli *clientv3.Client, key string) (*clientv3.GetResponse, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	return resp, len(resp.Kvs) > 0
}

// etcdAll returns every key and value in etcd.
func etcdAll(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("etcd get all: %v", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

// withoutTimes is a status document as canonical JSON, "time" and
// "lastSync" removed (they change with every sync).
func withoutTimes(t *testing.T, doc []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("status document: %v\n%s", err, doc)
	}
	delete(m, "time")
	delete(m, "lastSync")
	b, _ := json.Marshal(m)
	return string(b)
}

// waitEtcdMatches waits until the status in etcd is /status (times
// aside) and returns it.
func waitEtcdMatches(t *testing.T, a *agenttest.Agent, cli *clientv3.Client, statusKey string, timeout time.Duration) api.Document {
	t.Helper()
	var doc api.Document
	testkit.WaitFor(t, timeout, func() (bool, string) {
		local := getOK(t, "http://"+a.Addr+"/status")
		resp, ok := etcdGet(t, cli, statusKey)
		if !ok {
			return false, "no status key " + statusKey
		}
		want, got := withoutTimes(t, []byte(local)), withoutTimes(t, resp.Kvs[0].Value)
		if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
			t.Fatal(err)
		}
		return got == want, fmt.Sprintf("etcd status differs from /status:\netcd:    %s\n/status: %s", got, want)
	})
	return doc
}

// ---- the tests ----

// TestStatusDocument: /status lists every pod with phase, source and
// revision, the rejected manifests with their reasons, and each source's
// error and last success: an http source whose server fails after a first
// good answer, and a file source whose file turns into broken YAML.
func TestStatusDocument(t *testing.T) {
	e := newEnv(t)
	webPort := testkit.FreePort(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1")+fmt.Sprintf("    ports: [{containerPort: 80, hostPort: %d, hostIP: 127.0.0.1}]\n", webPort))
	testkit.WriteFile(t, filepath.Join(local, "worker.yaml"), e.pod("worker", "1"))
	// Loses the host port to web (web.yaml sorts first).
	testkit.WriteFile(t, filepath.Join(local, "zcopy.yaml"), e.pod("web-copy", "1")+fmt.Sprintf("    ports: [{containerPort: 81, hostPort: %d, hostIP: 127.0.0.1}]\n", webPort))
	testkit.WriteFile(t, filepath.Join(local, "bad.yaml"), strings.Replace(e.pod("bad", "1"), "terminationGracePeriodSeconds: 1", "restartPolicy: Sometimes", 1))
	testkit.WriteFile(t, filepath.Join(local, "ghost.yaml"), strings.Replace(e.pod("ghost", "1"), "image: "+e.image, "image: hostlet-test-absent:nope", 1))

	var served atomic.Int32
	cmdb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if served.Add(1) > 1 {
			http.Error(w, "database on fire", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(e.podList("1", "cache")))
	}))
	t.Cleanup(cmdb.Close)
	extra := filepath.Join(e.dir, "extra.yaml")
	testkit.WriteFile(t, extra, e.pod("db", "1"))

	cfg := e.config(t, fmt.Sprintf(`sources:
  - {name: local, type: file, path: %s}
  - {name: cmdb, type: http, url: %q, interval: 1s, timeout: 2s}
  - {name: extra, type: file, path: %s}
`, local, cmdb.URL+"/hosts/test-host", extra))
	a := e.start(t, cfg)

	running := []string{"cache", "db", "web", "worker"}
	doc := a.WaitStatus(t, 90*time.Second, func(d api.Document) (bool, string) {
		ph := phases(d)
		for _, id := range running {
			if ph[id] != hsync.PhaseRunning {
				return false, fmt.Sprintf("phases %v", ph)
			}
		}
		return ph["ghost"] == hsync.PhaseFailed && findSource(d, "cmdb").Error != "", fmt.Sprintf("phases %v, cmdb error %q", ph, findSource(d, "cmdb").Error)
	})
	extraBefore := findSource(doc, "extra")
	if extraBefore.Error != "" || extraBefore.LastSuccess.IsZero() || extraBefore.Revision == "" {
		t.Fatalf("source extra before the YAML error: %+v", extraBefore)
	}

	// Break the extra file: its source reports the error, keeps its last
	// success time and its pod.
	broken := time.Now()
	testkit.WriteFile(t, extra, "version: v1beta1\nid: db\ncontainers: [\n  - {name: app\n")
	doc = a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		s := findSource(d, "extra")
		for _, p := range d.Pods {
			// Start times come from the engine's start events.
			if p.Phase == hsync.PhaseRunning && (len(p.Containers) == 0 || p.Containers[0].StartedAt == "") {
				return false, fmt.Sprintf("pod %s without a start time", p.ID)
			}
		}
		return s.Error != "" && d.LastSync.Start.After(broken), fmt.Sprintf("extra: %+v", s)
	})
	out, _ := json.MarshalIndent(doc, "", "  ")
	t.Logf("status:\n%s", out)

	if doc.Hostname != "test-host" || doc.Version != "test" || doc.Time.IsZero() || doc.LastSync.Start.IsZero() || doc.Machine.Cores < 1 || doc.Machine.MemoryBytes == 0 {
		t.Errorf("document head: hostname %q, version %q, time %s, lastSync %+v, machine %+v", doc.Hostname, doc.Version, doc.Time, doc.LastSync, doc.Machine)
	}
	wantSource := map[string]string{"web": "local", "worker": "local", "ghost": "local", "cache": "cmdb", "db": "extra"}
	if len(doc.Pods) != len(wantSource) {
		t.Errorf("%d pods in status, want %d: %v", len(doc.Pods), len(wantSource), phases(doc))
	}
	for _, p := range doc.Pods {
		src := findSource(doc, p.Source)
		if p.Source != wantSource[p.ID] || p.Revision == "" || p.Revision != src.Revision {
			t.Errorf("pod %s: source %q revision %q; want source %q at its revision %q", p.ID, p.Source, p.Revision, wantSource[p.ID], src.Revision)
		}
		if len(p.Containers) != 1 || p.Containers[0].Name != "app" || !strings.HasPrefix(p.Containers[0].Hash, "v1:") {
			t.Errorf("pod %s containers %+v", p.ID, p.Containers)
			continue
		}
		c := p.Containers[0]
		if p.ID == "ghost" {
			if p.Reason != hsync.ReasonPull || !strings.Contains(p.Message, "hostlet-test-absent:nope") || c.State != "absent" || c.LastError == "" {
				t.Errorf("pod ghost: phase %s reason %q message %q container %+v; want Failed, %s, naming the image", p.Phase, p.Reason, p.Message, c, hsync.ReasonPull)
			}
			continue
		}
		if c.State != "running" || c.ContainerID == "" || c.StartedAt == "" || !c.Healthy || c.Image != e.image || c.LastError != "" {
			t.Errorf("pod %s container %+v", p.ID, c)
		}
		if p.LastAction == nil || p.LastAction.Action != "create" {
			t.Errorf("pod %s last action %+v, want create", p.ID, p.LastAction)
		}
	}

	rejected := map[string]string{}
	for _, r := range doc.Rejected {
		rejected[r.ID] = r.Source + ": " + strings.Join(r.Reasons, "; ")
	}
	if r := rejected["web-copy"]; !strings.HasPrefix(r, "local: ") || !strings.Contains(r, fmt.Sprint(webPort)) || !strings.Contains(r, "web") {
		t.Errorf("web-copy rejected as %q, want a host-port conflict with web", r)
	}
	if r := rejected["bad"]; !strings.HasPrefix(r, "local: ") || !strings.Contains(r, "restartPolicy") || !strings.Contains(r, "Sometimes") {
		t.Errorf("bad rejected as %q, want the restartPolicy error", r)
	}
	if len(rejected) != 2 {
		t.Errorf("rejected %v, want web-copy and bad", rejected)
	}

	if s := findSource(doc, "local"); s.Error != "" || s.Type != "file" || s.Manifests != 5 || s.LastSuccess.IsZero() {
		t.Errorf("source local %+v, want no error and 5 manifests (rejected ones counted)", s)
	}
	cmdbSrc := findSource(doc, "cmdb")
	if !strings.Contains(cmdbSrc.Error, "500") || cmdbSrc.Type != "http" || cmdbSrc.Manifests != 1 || !strings.HasPrefix(cmdbSrc.Revision, "sha256:") {
		t.Errorf("source cmdb %+v, want the 500 with the last good set (1 manifest) and its revision", cmdbSrc)
	}
	if cmdbSrc.LastSuccess.IsZero() || !cmdbSrc.LastSuccess.Before(doc.Time) {
		t.Errorf("source cmdb last success %s, want the time of its one good answer", cmdbSrc.LastSuccess)
	}
	extraSrc := findSource(doc, "extra")
	if !strings.Contains(extraSrc.Error, "extra.yaml") || !extraSrc.LastSuccess.Equal(extraBefore.LastSuccess) || extraSrc.Revision != extraBefore.Revision || extraSrc.Manifests != 1 {
		t.Errorf("source extra after the YAML error %+v; want the error naming the file, the last success %s and revision %s kept", extraSrc, extraBefore.LastSuccess, extraBefore.Revision)
	}
	if p, _ := findPod(doc, "db"); p.Phase != hsync.PhaseRunning {
		t.Errorf("pod db %s after its source broke, want it kept Running", p.Phase)
	}

	// The same, as events.
	var evs []eventlog.Event
	if err := json.Unmarshal([]byte(getOK(t, "http://"+a.Addr+"/events")), &evs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, ev := range evs {
		seen[ev.Type+" "+ev.Pod] = true
		seen[ev.Type+" "+ev.Reason] = true
		if i > 0 && ev.Time.Before(evs[i-1].Time) {
			t.Errorf("events not oldest first: %v after %v", ev, evs[i-1])
		}
	}
	for _, want := range []string{"create web", "create cache", "pull-failed ghost", "source-error source cmdb", "source-error source extra"} {
		if !seen[want] {
			t.Errorf("no event %q in %v", want, seen)
		}
	}
}

// TestStatusEtcd: the status key in etcd is what /status shows; the
// liveness key has a lease of 3 × sync.interval (≥ 10 s) and is gone as
// soon as hostlet stops; events are under <prefix>/events/<host>/ with a
// 48 h lease; the status key outlives hostlet.
func TestStatusEtcd(t *testing.T) {
	e := newEnv(t)
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	dir := filepath.Join(e.dir, "manifests")
	testkit.WriteFile(t, filepath.Join(dir, "pods.yaml"), e.podList("1", "web", "worker"))
	cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
  prefix: /fleet
sources:
  - {name: local, type: file, path: %s}
`, etcd.Endpoint, dir))
	statusKey, aliveKey, eventsPrefix := reporter.Keys("/fleet", "test-host")
	if statusKey != "/fleet/status/test-host" || aliveKey != "/fleet/alive/test-host" || eventsPrefix != "/fleet/events/test-host/" {
		t.Fatalf("keys %s %s %s", statusKey, aliveKey, eventsPrefix)
	}
	a := e.start(t, cfg)
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		ph := phases(d)
		return ph["web"] == "Running" && ph["worker"] == "Running", fmt.Sprintf("phases %v", ph)
	})
	doc := waitEtcdMatches(t, a, cli, statusKey, 20*time.Second)
	if len(doc.Pods) != 2 || doc.Hostname != "test-host" {
		t.Errorf("etcd status: hostname %q, %d pods", doc.Hostname, len(doc.Pods))
	}
	if resp, _ := etcdGet(t, cli, statusKey); resp.Kvs[0].Lease != 0 {
		t.Errorf("the status key has a lease (%x); the last report must outlive the host", resp.Kvs[0].Lease)
	}

	alive, ok := etcdGet(t, cli, aliveKey)
	if !ok || alive.Kvs[0].Lease == 0 {
		t.Fatalf("liveness key %s: present %v, want it under a lease", aliveKey, ok)
	}
	ttl := leaseTTL(t, cli, alive.Kvs[0].Lease)
	if ttl.GrantedTTL != 10 || ttl.TTL <= 0 {
		t.Errorf("liveness lease: granted %d s, %d s left; want 10 s (3 × 1 s, at least 10 s)", ttl.GrantedTTL, ttl.TTL)
	}

	// Events: the creates of both pods, as JSON, under a 48 h lease.
	var evKeys []string
	testkit.WaitFor(t, 20*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, eventsPrefix, clientv3.WithPrefix())
		if err != nil {
			return false, err.Error()
		}
		created := map[string]bool{}
		evKeys = evKeys[:0]
		for _, kv := range resp.Kvs {
			evKeys = append(evKeys, string(kv.Key))
			var ev eventlog.Event
			if err := json.Unmarshal(kv.Value, &ev); err != nil {
				t.Fatalf("event %s: %v: %s", kv.Key, err, kv.Value)
			}
			if ev.Time.IsZero() || ev.Type == "" {
				t.Errorf("event %s: %s", kv.Key, kv.Value)
			}
			if ev.Type == eventlog.Create {
				created[ev.Pod] = true
			}
			if kv.Lease == 0 {
				t.Fatalf("event %s has no lease", kv.Key)
			}
			if kv.Lease == alive.Kvs[0].Lease {
				t.Fatalf("event %s shares the liveness lease", kv.Key)
			}
			ttl := leaseTTL(t, cli, kv.Lease)
			if ttl.GrantedTTL != int64((48*time.Hour).Seconds()) || ttl.TTL < int64((47*time.Hour).Seconds()) {
				t.Fatalf("event %s lease: granted %d s, %d s left; want 48 h", kv.Key, ttl.GrantedTTL, ttl.TTL)
			}
		}
		return created["web"] && created["worker"], fmt.Sprintf("events in etcd %q", evKeys)
	})
	t.Logf("events in etcd: %q", evKeys)

	a.Stop()
	if resp, ok := etcdGet(t, cli, aliveKey); ok {
		t.Errorf("liveness key still there after agent.Run returned: %s (the lease must be revoked)", resp.Kvs[0].Value)
	}
	if r := leaseTTL(t, cli, alive.Kvs[0].Lease); r.TTL != -1 {
		t.Errorf("liveness lease has %d s left after hostlet stopped, want revoked", r.TTL)
	}
	if _, ok := etcdGet(t, cli, statusKey); !ok {
		t.Error("the status key went with hostlet")
	}
}

func leaseTTL(t *testing.T, cli *clientv3.Client, lease int64) *clientv3.LeaseTimeToLiveResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		t.Fatalf("TimeToLive %x: %v", lease, err)
	}
	return r
}

// TestStatusEtcdOutage: with etcd stopped, syncs go on at the same pace
// and take as little time as before (the histogram of /metrics says so),
// /healthz stays 200 and a change is applied; when etcd returns, the status
// key shows that change and the liveness key is back.
func TestStatusEtcdOutage(t *testing.T) {
	e := newEnv(t)
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	dir := filepath.Join(e.dir, "manifests")
	testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), e.pod("web", "1"))
	cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
sources:
  - {name: local, type: file, path: %s}
`, etcd.Endpoint, dir))
	statusKey, aliveKey, _ := reporter.Keys("/hostlet", "test-host")
	a := e.start(t, cfg)
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["web"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	waitEtcdMatches(t, a, cli, statusKey, 20*time.Second)

	before := watchSyncs(t, a.Addr, 5, 20*time.Second)
	t.Logf("before the outage: %d syncs, mean %s, longest gap %s", before.syncs, before.mean, before.maxGap)

	etcd.Stop()
	outage := time.Now()
	during := watchSyncs(t, a.Addr, 5, 20*time.Second)
	t.Logf("etcd down: %d syncs, mean %s, longest gap %s", during.syncs, during.mean, during.maxGap)
	for _, p := range []struct {
		name string
		syncPace
	}{{"before the outage", before}, {"during the outage", during}} {
		if p.mean >= 500*time.Millisecond {
			t.Errorf("%s: syncs took %s on average, want well under 1 s", p.name, p.mean)
		}
		if p.maxGap > 2500*time.Millisecond {
			t.Errorf("%s: %s without a sync at a 1 s interval", p.name, p.maxGap)
		}
	}
	if code, body := call(t, http.MethodGet, "http://"+a.Addr+"/healthz", nil, ""); code != http.StatusOK {
		t.Errorf("/healthz with etcd down: %d %s", code, body)
	}

	// A change during the outage is applied at once.
	testkit.WriteFile(t, filepath.Join(dir, "late.yaml"), e.pod("late", "1"))
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["late"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	t.Logf("pod added and running %s into the outage", time.Since(outage).Round(time.Millisecond))

	etcd.Restart()
	back := time.Now()
	doc := waitEtcdMatches(t, a, cli, statusKey, 60*time.Second)
	t.Logf("etcd status current %s after etcd returned", time.Since(back).Round(time.Millisecond))
	if p, ok := findPod(doc, "late"); !ok || p.Phase != "Running" {
		t.Errorf("etcd status after the outage: late %+v, want Running", p)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, ok := etcdGet(t, cli, aliveKey)
		return ok, "no liveness key after etcd returned"
	})
}

// TestStatusMetrics: /metrics parses as Prometheus text and its figures
// follow the pods: Running pods, restarts after a crash, the source's
// revision.
func TestStatusMetrics(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "manifests")
	testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), e.pod("web", "1"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", dir))
	a := e.start(t, cfg)
	doc := a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["web"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	rev0 := findSource(doc, "local").Revision

	var mfs map[string]*dto.MetricFamily
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		mfs = scrape(t, a.Addr)
		v, _ := metricValue(mfs, "hostlet_pods", map[string]string{"phase": "Running"})
		revs := labelValues(mfs, "hostlet_source_revision_info", map[string]string{"source": "local"}, "revision")
		return v == 1 && slices.Equal(revs, []string{rev0}), fmt.Sprintf("Running %v, revisions %v (want %s)", v, revs, rev0)
	})
	for name, typ := range map[string]dto.MetricType{
		"hostlet_sync_duration_seconds": dto.MetricType_HISTOGRAM, "hostlet_syncs_total": dto.MetricType_COUNTER,
		"hostlet_sync_errors_total": dto.MetricType_COUNTER, "hostlet_pods": dto.MetricType_GAUGE,
		"hostlet_container_restarts": dto.MetricType_COUNTER, "hostlet_source_revision_info": dto.MetricType_GAUGE,
		"hostlet_source_fetch_duration_seconds": dto.MetricType_HISTOGRAM, "hostlet_source_up": dto.MetricType_GAUGE,
		"hostlet_build_info": dto.MetricType_GAUGE, "hostlet_unproven_containers": dto.MetricType_GAUGE,
		"hostlet_unproven_container_events_dropped_total": dto.MetricType_COUNTER,
	} {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("%s: %v, want a %s", name, mf, typ)
		}
	}
	if v, ok := metricValue(mfs, "hostlet_unproven_containers", nil); !ok || v != 0 {
		t.Errorf("hostlet_unproven_containers %v %v, want 0: every container is hostlet's", v, ok)
	}
	if v, _ := metricValue(mfs, "hostlet_syncs_total", nil); v < 1 {
		t.Errorf("hostlet_syncs_total %v", v)
	}
	if v, ok := metricValue(mfs, "hostlet_build_info", map[string]string{"version": "test"}); !ok || v != 1 {
		t.Errorf("hostlet_build_info{version=test} %v %v", v, ok)
	}
	if len(series(mfs, "hostlet_source_fetch_duration_seconds", map[string]string{"source": "local"})) != 1 {
		t.Error("no fetch duration for source local")
	}

	// One more pod: Running goes from 1 to 2, and the revision moves.
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(dir, "crashy.yaml"), e.demoPod("crashy", port, ""))
	var rev1 string
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		mfs = scrape(t, a.Addr)
		v, _ := metricValue(mfs, "hostlet_pods", map[string]string{"phase": "Running"})
		revs := labelValues(mfs, "hostlet_source_revision_info", map[string]string{"source": "local"}, "revision")
		if len(revs) == 1 {
			rev1 = revs[0]
		}
		return v == 2 && len(revs) == 1 && rev1 != rev0, fmt.Sprintf("Running %v, revisions %v (old %s)", v, revs, rev0)
	})
	doc, err := a.Status()
	if err != nil {
		t.Fatal(err)
	}
	if got := findSource(doc, "local").Revision; got != rev1 {
		t.Errorf("metric revision %s, /status revision %s", rev1, got)
	}
	if v, ok := metricValue(mfs, "hostlet_container_restarts", map[string]string{"pod": "crashy", "container": "app"}); !ok || v != 0 {
		t.Errorf("restarts of crashy before the crash: %v (%v)", v, ok)
	}

	// A crash: the engine restarts it (restartPolicy Always) and the
	// counter moves.
	waitDemo(t, port)
	if code, body, err := tryCall(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/exit?code=1", port), nil, ""); err != nil || code != 200 {
		t.Fatalf("POST /exit: %d %s %v", code, body, err)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		mfs = scrape(t, a.Addr)
		v, _ := metricValue(mfs, "hostlet_container_restarts", map[string]string{"pod": "crashy", "container": "app"})
		return v >= 1, fmt.Sprintf("restarts of crashy %v", v)
	})
	if v, _ := metricValue(mfs, "hostlet_container_restarts", map[string]string{"pod": "web", "container": "app"}); v != 0 {
		t.Errorf("restarts of web %v, want 0", v)
	}
	waitDemo(t, port)
	doc, err = a.Status()
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := findPod(doc, "crashy"); len(p.Containers) != 1 || p.Containers[0].Restarts < 1 {
		t.Errorf("status of crashy after the crash: %+v", p.Containers)
	}
}

// TestStatusStats: /stats/{pod}/{container} reports the container's
// memory from the engine (it grows when the demo server allocates 64 MiB);
// /stats reports the machine.
func TestStatusStats(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "manifests")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(dir, "mem.yaml"), e.demoPod("mem", port, ""))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", dir))
	a := e.start(t, cfg)
	doc := a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["mem"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	waitDemo(t, port)
	p, _ := findPod(doc, "mem")

	read := func() api.ContainerStatsDoc {
		t.Helper()
		var st api.ContainerStatsDoc
		if err := json.Unmarshal([]byte(getOK(t, "http://"+a.Addr+"/stats/mem/app")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	base := read()
	t.Logf("before: %+v", base)
	if base.Pod != "mem" || base.Container != "app" || base.ContainerID != p.Containers[0].ContainerID || base.MemoryWorkingSetBytes == 0 || base.Time.IsZero() || base.Pids == 0 {
		t.Errorf("stats %+v (container %s)", base, p.Containers[0].ContainerID)
	}
	if code, body, err := tryCall(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/alloc?mb=64", port), nil, ""); err != nil || code != 200 {
		t.Fatalf("POST /alloc: %d %s %v", code, body, err)
	}
	var after api.ContainerStatsDoc
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		after = read()
		grown := int64(after.MemoryWorkingSetBytes) - int64(base.MemoryWorkingSetBytes)
		return grown >= 50<<20, fmt.Sprintf("working set grew by %d MiB", grown>>20)
	})
	t.Logf("after 64 MiB: %+v", after)
	if after.MemoryUsageBytes < after.MemoryWorkingSetBytes {
		t.Errorf("usage %d below working set %d", after.MemoryUsageBytes, after.MemoryWorkingSetBytes)
	}

	var ms api.MachineStats
	if err := json.Unmarshal([]byte(getOK(t, "http://"+a.Addr+"/stats")), &ms); err != nil {
		t.Fatal(err)
	}
	if ms.Cores != goruntime.NumCPU() || ms.MemoryBytes == 0 || ms.MemoryAvailableBytes == 0 || ms.MemoryAvailableBytes > ms.MemoryBytes || ms.Pods != 1 || ms.Containers != 1 {
		t.Errorf("machine stats %+v", ms)
	}
	if code, body := call(t, http.MethodGet, "http://"+a.Addr+"/stats/mem/nope", nil, ""); code != http.StatusNotFound || !strings.Contains(body, "nope") {
		t.Errorf("stats of an unknown container: %d %s", code, body)
	}
}

// TestStatusSecretNeverShown: an env value set in a manifest reaches the
// container and nothing else: not the log (at debug level), /status,
// /pods, /events, /metrics, /stats, or any key in etcd. Changing it
// recreates the container with the reason "env SECRET changed" and shows
// neither value.
func TestStatusSecretNeverShown(t *testing.T) {
	e := newEnv(t)
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	secret := "s3cret-" + hex.EncodeToString(b)
	_, _ = rand.Read(b)
	secret2 := "s3cret-" + hex.EncodeToString(b)
	dir := filepath.Join(e.dir, "manifests")
	manifest := func(value string) string {
		return e.pod("web", "1") + fmt.Sprintf("    env:\n      - {name: SECRET, value: %q}\n      - {name: MODE, value: prod}\n", value)
	}
	testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), manifest(secret))
	cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
sources:
  - {name: local, type: file, path: %s}
`, etcd.Endpoint, dir))
	log, logs := captureLog(t)
	a := agenttest.Start(t, cfg, log)
	statusKey, _, _ := reporter.Keys("/hostlet", "test-host")

	doc := a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["web"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	first, _ := findPod(doc, "web")
	id1 := first.Containers[0].ContainerID
	// The value is live: the engine has it.
	if env := e.containerEnv(t, id1); !slices.Contains(env, "SECRET="+secret) {
		t.Fatalf("container env %q lacks the secret: the test would prove nothing", env)
	}
	waitEtcdMatches(t, a, cli, statusKey, 20*time.Second)

	// /pods shows the engine's env with the value hashed.
	var pd api.PodDoc
	if err := json.Unmarshal([]byte(getOK(t, "http://"+a.Addr+"/pods/web")), &pd); err != nil {
		t.Fatal(err)
	}
	hasher, err := hsync.ReadEnvHasher(cfg.StateDir)
	if err != nil {
		t.Fatalf("the host's env hash key: %v", err)
	}
	if len(pd.Engine) != 1 || !slices.Contains(pd.Engine[0].Env, "SECRET="+hasher.Hash("SECRET", secret)) {
		t.Errorf("/pods/web engine env: %+v, want SECRET with its keyed hash", pd.Engine)
	}
	everywhere := func(secrets ...string) {
		t.Helper()
		outputs := map[string]string{"the log": logs.String()}
		for _, p := range []string{"/status", "/pods/web", "/events", "/metrics", "/stats", "/stats/web/app"} {
			outputs[p] = getOK(t, "http://"+a.Addr+p)
		}
		for k, v := range etcdAll(t, cli) {
			outputs["etcd "+k] = k + "=" + v
		}
		for what, out := range outputs {
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("%s shows the env value %s:\n%s", what, s, out)
				}
			}
		}
		t.Logf("searched %d outputs (%d bytes of log) for %d values", len(outputs), len(logs.String()), len(secrets))
	}
	everywhere(secret)

	// A new value: the container is recreated, the reason names the
	// variable, not the values.
	changed := time.Now()
	testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), manifest(secret2))
	doc = a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		p, _ := findPod(d, "web")
		ok := p.Phase == "Running" && len(p.Containers) == 1 && p.Containers[0].ContainerID != id1 && p.LastAction != nil && p.LastAction.Time.After(changed)
		return ok, fmt.Sprintf("web %s, last action %+v", p.Phase, p.LastAction)
	})
	p, _ := findPod(doc, "web")
	if p.LastAction.Action != "recreate" || !strings.Contains(p.LastAction.Reason, "env SECRET changed") || strings.Contains(p.LastAction.Reason, "MODE") {
		t.Errorf("last action %+v, want a recreate for \"env SECRET changed\" only", p.LastAction)
	}
	if env := e.containerEnv(t, p.Containers[0].ContainerID); !slices.Contains(env, "SECRET="+secret2) {
		t.Errorf("new container env %q lacks the new value", env)
	}
	var evs []eventlog.Event
	if err := json.Unmarshal([]byte(getOK(t, "http://"+a.Addr+"/events")), &evs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || ev.Pod == "web" && strings.Contains(ev.Reason, "env SECRET changed")
	}
	if !found {
		t.Errorf("no event with the reason \"env SECRET changed\" in %+v", evs)
	}
	doc = waitEtcdMatches(t, a, cli, statusKey, 20*time.Second)
	if p, _ := findPod(doc, "web"); p.LastAction == nil || !strings.Contains(p.LastAction.Reason, "env SECRET changed") {
		t.Errorf("etcd status: web last action %+v", p.LastAction)
	}
	everywhere(secret, secret2)
}

// containerEnv is the env of a container as the engine has it.
func (e *env) containerEnv(t *testing.T, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := e.docker.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return info.Config.Env
}

func hubSignature(key, body string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// TestStatusSyncEndpoint: POST /sync needs the token or a valid
// X-Hub-Signature-256 of the body; an accepted one makes an http source
// polled hourly fetch at once. Without a tokenFile there is no POST /sync.
func TestStatusSyncEndpoint(t *testing.T) {
	e := newEnv(t)
	tf, token := tokenFile(t)
	var body atomic.Value
	body.Store(e.podList("1", "web"))
	cmdb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(cmdb.Close)
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: cmdb, type: http, url: %q, interval: 1h, timeout: 2s}\n", tf, cmdb.URL))
	a := e.start(t, cfg)
	doc := a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		return phases(d)["web"] == "Running", fmt.Sprintf("phases %v", phases(d))
	})
	rev := findSource(doc, "cmdb").Revision
	url := "http://" + a.Addr + "/sync"
	hook := `{"ref":"refs/heads/main","after":"0123abc"}`

	refused := []struct {
		name   string
		header http.Header
	}{
		{"no token", nil},
		{"wrong token", http.Header{"Authorization": {"Bearer wrong"}}},
		{"signature with another key", http.Header{"X-Hub-Signature-256": {hubSignature("wrong", hook)}}},
		{"signature of another body", http.Header{"X-Hub-Signature-256": {hubSignature(token, hook+"x")}}},
	}
	for _, tt := range refused {
		code, out := call(t, http.MethodPost, url, tt.header, hook)
		if code != http.StatusUnauthorized {
			t.Errorf("POST /sync, %s: %d %s, want 401", tt.name, code, out)
		}
	}

	// Each accepted request brings the changed body in at once (the
	// source's own interval is an hour).
	accepted := []struct {
		name   string
		header http.Header
		pods   []string
	}{
		{"token", http.Header{"Authorization": {"Bearer " + token}}, []string{"web", "api"}},
		{"signature", http.Header{"X-Hub-Signature-256": {hubSignature(token, hook)}}, []string{"web", "api", "db"}},
	}
	for _, tt := range accepted {
		body.Store(e.podList("1", tt.pods...))
		sent := time.Now()
		code, out := call(t, http.MethodPost, url, tt.header, hook)
		if code != http.StatusAccepted {
			t.Fatalf("POST /sync, %s: %d %s, want 202", tt.name, code, out)
		}
		doc = a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
			s := findSource(d, "cmdb")
			return s.Revision != rev && len(d.Pods) == len(tt.pods), fmt.Sprintf("cmdb revision %s (before %s), %d pods", s.Revision, rev, len(d.Pods))
		})
		rev = findSource(doc, "cmdb").Revision
		t.Logf("POST /sync by %s: new revision in status after %s", tt.name, time.Since(sent).Round(time.Millisecond))
	}

	t.Run("no tokenFile: 404", func(t *testing.T) {
		e := newEnv(t)
		a := e.start(t, e.config(t, "sources: []\n"))
		for _, h := range []http.Header{nil, {"Authorization": {"Bearer " + token}}, {"X-Hub-Signature-256": {hubSignature(token, hook)}}} {
			if code, out := call(t, http.MethodPost, "http://"+a.Addr+"/sync", h, hook); code != http.StatusNotFound {
				t.Errorf("POST /sync without a tokenFile: %d %s, want 404", code, out)
			}
		}
	})
}

// TestStatusSlowloris: clients sending their headers one byte every
// 500 ms are cut off after ReadHeaderTimeout (5 s), while /healthz
// answers other clients at once all along.
func TestStatusSlowloris(t *testing.T) {
	e := newEnv(t)
	a := e.start(t, e.config(t, "sources: []\n"))
	const (
		conns   = 5
		timeout = 5 * time.Second // api's ReadHeaderTimeout
		margin  = 2 * time.Second
		maxTick = 40 // 20 s: well past timeout+margin
	)
	type slow struct {
		conn   net.Conn
		closed chan time.Duration // how long after the first byte the server closed
		got    chan []byte        // what the server sent before closing
	}
	var all []*slow
	start := time.Now()
	for range conns {
		c, err := net.DialTimeout("tcp", a.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")); err != nil {
			t.Fatal(err)
		}
		s := &slow{conn: c, closed: make(chan time.Duration, 1), got: make(chan []byte, 1)}
		go func() {
			b, _ := io.ReadAll(c) // returns when the server closes
			s.got <- b
			s.closed <- time.Since(start)
		}()
		all = append(all, s)
	}

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var slowest time.Duration
	open := conns
	for i := 0; open > 0 && i < maxTick; i++ {
		<-tick.C
		// Meanwhile, a normal client is served at once.
		if i%3 == 0 {
			t0 := time.Now()
			code, body := call(t, http.MethodGet, "http://"+a.Addr+"/healthz", nil, "")
			if took := time.Since(t0); code != http.StatusOK || took > time.Second {
				t.Errorf("GET /healthz during the slow clients: %d %q after %s", code, body, took)
			}
		}
		for _, s := range all {
			if s.conn == nil {
				continue
			}
			select {
			case d := <-s.closed:
				if b := <-s.got; len(b) != 0 {
					t.Errorf("server answered a half-sent request: %q", b)
				}
				slowest = max(slowest, d)
				s.conn = nil
				open--
				continue
			default:
			}
			// One more header byte; a write error means the server has
			// closed (the reader reports when).
			_, _ = s.conn.Write([]byte("a"))
		}
	}
	if open > 0 {
		t.Fatalf("%d of %d slow connections still open after %s", open, conns, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("every slow connection closed; the last after %s", slowest.Round(time.Millisecond))
	if slowest > timeout+margin {
		t.Errorf("a slow connection was closed after %s, want within %s + %s", slowest, timeout, margin)
	}
	if slowest < timeout-margin {
		t.Errorf("slow connections closed after %s, before the header timeout: something else closed them", slowest)
	}
}
