package agentrun_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
)

// TestAllowEmptyGuard: a file source whose manifests vanish (the folder
// holding them renamed away inside the checkout) reads as empty. With the
// guard on that is an error and nothing is pruned; with allowEmpty the
// pods are removed.
func TestAllowEmptyGuard(t *testing.T) {
	for _, allowEmpty := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowEmpty=%v", allowEmpty), func(t *testing.T) {
			e := newEnv(t)
			checkout := filepath.Join(e.dir, "checkout")
			for _, id := range []string{"web", "api"} {
				testkit.WriteFile(t, filepath.Join(checkout, "hosts", "test-host", id+".yaml"), e.pod(id, "1"))
			}
			cfg := e.config(t, fmt.Sprintf("  allowEmpty: %v\nsources:\n  - {name: fleet, type: file, path: %s, interval: 1s}\n", allowEmpty, checkout))
			a := e.start(t, cfg)
			before := e.waitPods(t, 60*time.Second, "api", "web")

			if err := os.Rename(filepath.Join(checkout, "hosts"), filepath.Join(e.dir, "hosts.old")); err != nil {
				t.Fatal(err)
			}
			if allowEmpty {
				e.waitPods(t, 60*time.Second)
				doc, err := a.Status()
				if err != nil {
					t.Fatal(err)
				}
				if _, errText, _ := sourceStatus(doc, "fleet"); errText != "" {
					t.Errorf("source error %q after an allowed empty read", errText)
				}
				return
			}
			seen := time.Now()
			doc := a.WaitStatus(t, 10*time.Second, func(d api.Document) (bool, string) {
				_, errText, _ := sourceStatus(d, "fleet")
				return strings.Contains(errText, "holds no manifests"), "source error " + errText
			})
			t.Logf("source error: %s", doc.Sources[0].Error)
			// Two full syncs after the error: the pods must still run.
			a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
				return syncedSince(d, seen.Add(1500*time.Millisecond)), fmt.Sprintf("last sync started %s", d.LastSync.Start)
			})
			after := e.containers(t)
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("containers changed after the empty read:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// TestRestartWithSourcesDown: hostlet restarted while its HTTP server and
// etcd are gone runs from the persisted sets: every pod keeps running, none
// is restarted, and /status shows each source's error.
func TestRestartWithSourcesDown(t *testing.T) {
	e := newEnv(t)
	body := e.podList("1", "web", "worker")
	cmdb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(cmdb.Close)
	etcd := etcdtest.Start(t)
	key := "/registry/hosts/test-host/kubelet"
	etcdtest.Put(t, etcd.Client(t), key, e.podList("1", "db"))

	cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
sources:
  - {name: cmdb, type: http, url: %q, interval: 1s, timeout: 2s}
  - {name: registry, type: etcd, key: %q, interval: 1s, timeout: 2s}
`, etcd.Endpoint, cmdb.URL+"/hosts/test-host", key))
	first := e.start(t, cfg)
	before := e.waitPods(t, 60*time.Second, "db", "web", "worker")
	first.WaitStatus(t, 10*time.Second, func(d api.Document) (bool, string) {
		return len(d.Pods) == 3 && d.Pods[0].Phase == "Running", fmt.Sprintf("%d pods in status", len(d.Pods))
	})

	cmdb.Close()
	etcd.Stop()
	first.Stop()

	restart := time.Now()
	second := e.start(t, cfg)
	doc := second.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		_, cmdbErr, _ := sourceStatus(d, "cmdb")
		_, regErr, _ := sourceStatus(d, "registry")
		return cmdbErr != "" && regErr != "" && syncedSince(d, restart) && len(d.Pods) == 3,
			fmt.Sprintf("cmdb error %q, registry error %q, last sync %s, %d pods", cmdbErr, regErr, d.LastSync.Start, len(d.Pods))
	})
	for _, s := range doc.Sources {
		t.Logf("source %s: revision %s, error %q", s.Name, s.Revision, s.Error)
		if s.Revision == "" {
			t.Errorf("source %s has no revision after the restart; the persisted set should name it", s.Name)
		}
	}
	// A few more syncs with the sources down.
	second.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, restart.Add(3*time.Second)), fmt.Sprintf("last sync started %s", d.LastSync.Start)
	})
	after := e.containers(t)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("containers changed across the restart:\nbefore %+v\nafter  %+v", before, after)
	}
	doc, err := second.Status()
	if err != nil {
		t.Fatal(err)
	}
	wantSource := map[string]string{"web": "cmdb", "worker": "cmdb", "db": "registry"}
	for _, p := range doc.Pods {
		if p.Phase != "Running" || p.Source != wantSource[p.ID] || p.Revision == "" {
			t.Errorf("pod %s after the restart: phase %s, source %q, revision %q; want Running from %s with a revision", p.ID, p.Phase, p.Source, p.Revision, wantSource[p.ID])
		}
		for _, c := range p.Containers {
			if c.Restarts != 0 {
				t.Errorf("pod %s container %s: %d restarts", p.ID, c.Name, c.Restarts)
			}
		}
	}
}

// TestPushEndpoint: POST /manifests through a running hostlet.
func TestPushEndpoint(t *testing.T) {
	e := newEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: push, type: push}\n", tokenFile))
	a := e.start(t, cfg)

	// Three errors in two manifests: a bad container name and a negative
	// memory limit, and an unknown pull policy.
	invalid := strings.Replace(e.pod("bad", "1"), "name: app", "name: Bad_Name", 1) + "    memory: -5\n" +
		"---\n" + strings.Replace(e.pod("bad2", "1"), "imagePullPolicy: Never", "imagePullPolicy: Sometimes", 1)
	var revision string
	tests := []struct {
		name    string
		token   string
		body    string
		code    int
		minErrs int
	}{
		{name: "no token", body: e.pod("pushed", "1"), code: 401},
		{name: "wrong token", token: "guess", body: e.pod("pushed", "1"), code: 401},
		{name: "2 MiB body", token: "s3cret", body: strings.Repeat("# padding\n", 2<<20/10), code: 413},
		{name: "invalid manifests: every error", token: "s3cret", body: invalid, code: 400, minErrs: 3},
		{name: "valid", token: "s3cret", body: e.pod("pushed", "1"), code: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, reply := push(t, a.Addr, tt.token, tt.body)
			if code != tt.code {
				t.Fatalf("status %d %+v, want %d", code, reply, tt.code)
			}
			if len(reply.Errors) < tt.minErrs {
				t.Fatalf("%d errors %+v, want at least %d", len(reply.Errors), reply.Errors, tt.minErrs)
			}
			if tt.minErrs > 0 {
				var all []string
				for _, err := range reply.Errors {
					all = append(all, err.Error())
				}
				t.Logf("errors: %q", all)
				joined := strings.Join(all, "\n")
				if !strings.Contains(joined, `pod "bad"`) || !strings.Contains(joined, `pod "bad2"`) {
					t.Errorf("errors %q do not name both pods", all)
				}
			}
			if tt.code == 200 {
				revision = reply.Revision
				return
			}
			if bs := e.containers(t); len(bs) != 0 {
				t.Errorf("a refused POST started containers: %+v", bs)
			}
		})
	}
	if revision == "" {
		t.Fatal("no valid push")
	}
	before := e.waitPods(t, 60*time.Second, "pushed")
	if before[0].Source != "push" {
		t.Errorf("pushed pod labelled source %q", before[0].Source)
	}

	// The pushed set is persisted: a restarted hostlet still runs it.
	a.Stop()
	restart := time.Now()
	b := e.start(t, cfg)
	b.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		_, errText, rev := sourceStatus(d, "push")
		return rev == revision && errText == "" && syncedSince(d, restart.Add(2*time.Second)) && len(d.Pods) == 1 && d.Pods[0].Phase == "Running",
			fmt.Sprintf("push revision %q (want %q), %d pods, last sync %s", rev, revision, len(d.Pods), d.LastSync.Start)
	})
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("pushed pod changed across the restart:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestPushEndpointOff: POST /manifests is 404 without a tokenFile, and
// without a push source.
func TestPushEndpointOff(t *testing.T) {
	tests := []struct {
		name string
		rest func(tokenFile string) string
	}{
		{name: "push source, no tokenFile", rest: func(string) string { return "sources:\n  - {name: push, type: push}\n" }},
		{name: "tokenFile, no push source", rest: func(tf string) string { return "tokenFile: " + tf + "\nsources: []\n" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tokenFile := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			a := e.start(t, e.config(t, tt.rest(tokenFile)))
			if code, reply := push(t, a.Addr, "s3cret", e.pod("pushed", "1")); code != http.StatusNotFound {
				t.Errorf("POST /manifests: %d %+v, want 404", code, reply)
			}
		})
	}
}

func push(t *testing.T, addr, token, body string) (int, sources.PushResponse) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/manifests", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply sources.PushResponse
	if resp.StatusCode != http.StatusNotFound {
		if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
			t.Fatalf("POST /manifests: %d, reply not JSON: %v", resp.StatusCode, err)
		}
	}
	return resp.StatusCode, reply
}

// TestDuplicateIDAcrossSources: the same ID from a file source and a later
// etcd source: the file source's pod runs, the etcd one is rejected and
// shown in /status.
func TestDuplicateIDAcrossSources(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "manifests")
	testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), e.pod("web", "file"))
	etcd := etcdtest.Start(t)
	key := "/registry/hosts/test-host/"
	cli := etcd.Client(t)
	etcdtest.Put(t, cli, key+"pods", e.podList("etcd", "web", "db"))
	cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
sources:
  - {name: local, type: file, path: %s}
  - {name: registry, type: etcd, key: %q, timeout: 2s}
`, etcd.Endpoint, dir, key))
	a := e.start(t, cfg)
	bs := e.waitPods(t, 60*time.Second, "db", "web")
	for _, b := range bs {
		want := map[string]string{"db": "registry", "web": "local"}[b.Pod]
		if b.Source != want || b.Labels[hruntime.LabelManaged] != "true" {
			t.Errorf("pod %s runs from source %q, want %q", b.Pod, b.Source, want)
		}
		if b.Pod == "web" && b.Labels["v"] != "file" {
			t.Errorf("web runs version %q, want the file source's", b.Labels["v"])
		}
	}
	doc := a.WaitStatus(t, 10*time.Second, func(d api.Document) (bool, string) {
		return len(d.Rejected) == 1, fmt.Sprintf("rejected %+v", d.Rejected)
	})
	r := doc.Rejected[0]
	if r.ID != "web" || r.Source != "registry" || !strings.Contains(strings.Join(r.Reasons, ";"), "duplicate id") {
		t.Errorf("rejected %+v, want web from registry as a duplicate id", r)
	}
}

// TestRunReturnsWhenListenFails: a taken listen address is an error
// returned at once, also with etcd configured (goroutines already started
// must not keep Run waiting).
func TestRunReturnsWhenListenFails(t *testing.T) {
	e := newEnv(t)
	l, err := net.Listen("tcp", e.listen)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	etcd := etcdtest.Start(t)
	cfg := e.config(t, fmt.Sprintf("etcd:\n  endpoints: [%s]\nsources: []\n", etcd.Endpoint))
	done := make(chan error, 1)
	ctx := t.Context()
	go func() {
		done <- runAgent(ctx, t, cfg)
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "listen") {
			t.Errorf("Run returned %v, want the listen error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent.Run did not return within 30s although it could not listen")
	}
}
