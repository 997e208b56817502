package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/textout"
)

// statusOutJSON runs `hostlet status -o json` with args, checks that it printed
// the status document itself (its keys at the top, as GET /status has
// them, plus "alive"), and decodes it.
func statusOutJSON(t *testing.T, args ...string) textout.HostStatus {
	t.Helper()
	res := runCLI(t, append([]string{"status", "-o", "json"}, args...)...)
	if res.code != 0 {
		t.Fatalf("hostlet status -o json %v: exit %d\n%s%s", args, res.code, res.stdout, res.stderr)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &keys); err != nil {
		t.Fatalf("hostlet status -o json: %v\n%s", err, res.stdout)
	}
	for _, k := range []string{"hostname", "version", "time", "lastSync", "sources", "pods", "rejected", "machine", "stateErrors", "alive"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("hostlet status -o json: no top-level %q (want the status document itself)\n%s", k, res.stdout)
		}
	}
	var doc struct {
		api.Document
		Alive bool `json:"alive"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("hostlet status -o json: %v\n%s", err, res.stdout)
	}
	return textout.HostStatus{Host: doc.Hostname, Alive: doc.Alive, Doc: doc.Document}
}

// podRunning reports whether v shows pod id Running.
func podRunning(v textout.HostStatus, id string) bool {
	for _, p := range v.Doc.Pods {
		if p.ID == id {
			return p.Phase == "Running"
		}
	}
	return false
}

// TestStatusCommand: `hostlet status` reads the local API; with
// etcd.endpoints it reads another host's report from etcd; once that host
// stopped (its liveness lease revoked) it shows the last report marked NOT
// ALIVE, exit 0; an API nobody answers on is exit 1.
func TestStatusCommand(t *testing.T) {
	image := dockertest.TestImage(t)
	instance := dockertest.Instance(t)
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	writeFile(t, dir, "manifests/web.yaml", dockertest.PausePod("web", image, ""))
	listen := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	hostCfg := writeFile(t, dir, "web-1.yaml", fmt.Sprintf(`hostname: web-1
instance: %s
stateDir: %s
listen: %s
docker: {infraImage: %s}
sync: {interval: 1s}
etcd: {endpoints: [%s], prefix: /fleet}
sources:
  - {name: local, type: file, path: %s}
`, instance, filepath.Join(dir, "state"), listen, image, etcd.Endpoint, filepath.Join(dir, "manifests")))
	// The same host asked through its API (no etcd), and an operator's
	// machine asking etcd.
	localCfg := writeFile(t, dir, "local.yaml", fmt.Sprintf("hostname: web-1\nlisten: %s\n", listen))
	opsCfg := writeFile(t, dir, "ops.yaml", fmt.Sprintf("hostname: ops-1\netcd: {endpoints: [%s], prefix: /fleet}\n", etcd.Endpoint))

	cfg, err := config.Load(hostCfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := agenttest.Start(t, cfg, nil).Stop
	local, err := config.Load(localCfg)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := config.Load(opsCfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		v, err := statusFromAPI(t.Context(), local, "web-1")
		if err != nil {
			return false, err.Error()
		}
		return podRunning(v, "web"), fmt.Sprintf("pods %+v", v.Doc.Pods)
	})

	t.Run("local API", func(t *testing.T) {
		res := runCLI(t, "status", "--config", localCfg)
		t.Logf("hostlet status:\n%s", res.stdout)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		for _, want := range []string{"host web-1: alive; hostlet test", "SOURCE", "local", "POD", "web", "app", "Running", "running", image} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		v := statusOutJSON(t, "--config", localCfg)
		if v.Host != "web-1" || !v.Alive || !podRunning(v, "web") {
			t.Errorf("status -o json: host %q alive %v pods %+v", v.Host, v.Alive, v.Doc.Pods)
		}
	})

	t.Run("local API is not that host", func(t *testing.T) {
		res := runCLI(t, "status", "--config", localCfg, "--host", "web-2")
		if res.code != 1 || !strings.Contains(res.stderr, `"web-1", not "web-2"`) || !strings.Contains(res.stderr, "etcd.endpoints") {
			t.Errorf("status --host web-2 without etcd: exit %d, stderr %q; want 1 saying the API is web-1", res.code, res.stderr)
		}
	})

	// etcd: wait until the host's report shows the pod.
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		v, err := statusFromEtcd(t.Context(), ops, "web-1")
		if err != nil {
			return false, err.Error()
		}
		return v.Alive && podRunning(v, "web"), fmt.Sprintf("alive %v, pods %+v", v.Alive, v.Doc.Pods)
	})
	t.Run("etcd, alive", func(t *testing.T) {
		res := runCLI(t, "status", "--config", opsCfg, "--host", "web-1")
		t.Logf("hostlet status --host web-1:\n%s", res.stdout)
		if res.code != 0 || !strings.Contains(res.stdout, "host web-1: alive") || !strings.Contains(res.stdout, "Running") {
			t.Errorf("exit %d, stdout:\n%s%s", res.code, res.stdout, res.stderr)
		}
		v := statusOutJSON(t, "--config", opsCfg, "--host", "web-1")
		if !v.Alive || v.Doc.Hostname != "web-1" || !podRunning(v, "web") {
			t.Errorf("status -o json: alive %v host %q pods %+v", v.Alive, v.Doc.Hostname, v.Doc.Pods)
		}
	})

	t.Run("etcd, no such host", func(t *testing.T) {
		res := runCLI(t, "status", "--config", opsCfg)
		if res.code != 1 || !strings.Contains(res.stderr, `no status for host "ops-1"`) {
			t.Errorf("status of a host that never reported: exit %d, stderr %q", res.code, res.stderr)
		}
	})

	// The host stops: its liveness lease is revoked, its report stays.
	stop()
	t.Run("etcd, not alive", func(t *testing.T) {
		res := runCLI(t, "status", "--config", opsCfg, "--host", "web-1")
		t.Logf("hostlet status --host web-1 after it stopped:\n%s", res.stdout)
		if res.code != 0 {
			t.Fatalf("exit %d, want 0 for a host that is down: %s", res.code, res.stderr)
		}
		if !strings.Contains(res.stdout, "host web-1: NOT ALIVE") || !strings.Contains(res.stdout, "web") || !strings.Contains(res.stdout, "Running") {
			t.Errorf("output does not show the last report marked NOT ALIVE:\n%s", res.stdout)
		}
		v := statusOutJSON(t, "--config", opsCfg, "--host", "web-1")
		if v.Alive || !podRunning(v, "web") {
			t.Errorf("status -o json: alive %v pods %+v; want not alive with the last report", v.Alive, v.Doc.Pods)
		}
	})

	t.Run("API unreachable", func(t *testing.T) {
		res := runCLI(t, "status", "--config", localCfg)
		if res.code != 1 || !strings.Contains(res.stderr, "unreachable") {
			t.Errorf("status with the API down: exit %d, stdout %q, stderr %q; want 1, unreachable", res.code, res.stdout, res.stderr)
		}
	})
}

// TestStatusLapsedHost: a host that died long ago — its status key is there,
// its liveness key lapsed — is shown with its last report, marked NOT
// ALIVE, exit 0 (etcd only, no agent).
func TestStatusLapsedHost(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	statusKey, aliveKey, _ := reporter.Keys("/hostlet", "db-3")
	reported := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := fmt.Sprintf(`{"hostname":"db-3","version":"v0.1.0","time":%q,"lastSync":{"start":%q,"durationMs":7,"error":""},
"sources":[{"name":"fleet","type":"git","revision":"3f2a9c1e0d4b5a69788796a5b4c3d2e1f0a9b8c7","lastSuccess":%q,"error":"","manifests":1}],
"pods":[{"id":"pg","source":"fleet","revision":"3f2a9c1e0d4b5a69788796a5b4c3d2e1f0a9b8c7","phase":"Running","containers":[{"name":"db","image":"postgres:16","hash":"v1:x","state":"running","restarts":2,"healthy":true,"containerID":"c1","lastError":""}]}],
"rejected":[],"machine":{"cores":2,"memoryBytes":1024}}`, reported.Format(time.RFC3339), reported.Format(time.RFC3339), reported.Format(time.RFC3339))
	etcdtest.Put(t, cli, statusKey, doc)
	cfgFile := writeFile(t, t.TempDir(), "ops.yaml", fmt.Sprintf("hostname: ops-1\netcd: {endpoints: [%s]}\n", etcd.Endpoint))

	res := runCLI(t, "status", "--config", cfgFile, "--host", "db-3")
	t.Logf("hostlet status --host db-3:\n%s", res.stdout)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"host db-3: NOT ALIVE", "reported 2025-01-02T03:04:05Z", "pg", "db", "Running", "3f2a9c1e0d4b ", "postgres:16"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// The host comes back: alive.
	etcdtest.Put(t, cli, aliveKey, reported.Format(time.RFC3339))
	if v := statusOutJSON(t, "--config", cfgFile, "--host", "db-3"); !v.Alive || v.Doc.Pods[0].Containers[0].Restarts != 2 {
		t.Errorf("with the liveness key: alive %v, pods %+v", v.Alive, v.Doc.Pods)
	}

	res = runCLI(t, "status", "--config", cfgFile, "--host", "db-3", "-o", "yaml")
	if res.code != 1 || !strings.Contains(res.stderr, "text or json") {
		t.Errorf("-o yaml: exit %d, stderr %q", res.code, res.stderr)
	}
}
