package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// TestFleetStatus: hosts report to etcd as the reporter does (status and
// liveness keys), two releases are recorded as publish records them;
// `hostlet fleet status` lists the hosts behind the latest release
// first, with what each runs, and -o json says the same.
func TestFleetStatus(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	const (
		prefix = "/fleet"
		relOld = "1111111111111111111111111111111111111111"
		relNew = "2222222222222222222222222222222222222222"
	)
	at := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	report := func(host string, alive bool, doc api.Document) {
		t.Helper()
		doc.Hostname, doc.Version, doc.Time = host, "v0.1.0", at
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		statusKey, aliveKey, _ := reporter.Keys(prefix, host)
		etcdtest.Put(t, cli, statusKey, string(b))
		if alive {
			etcdtest.Put(t, cli, aliveKey, at.Format(time.RFC3339))
		}
	}
	release := func(rev string, when time.Time) {
		t.Helper()
		etcdtest.Put(t, cli, fleet.ReleaseKey(prefix, rev), fmt.Sprintf(`{"rev":%q,"time":%q,"state":"Complete","hostsChanged":["web-1"]}`, rev, when.Format(time.RFC3339Nano)))
	}
	pod := func(id, phase, rollout string) hsync.PodStatus {
		p := hsync.PodStatus{ID: id, Source: "fleet", Phase: phase}
		if rollout != "" {
			p.Rollout = &hsync.Rollout{State: rollout, Since: at}
		}
		return p
	}
	src := func(name, typ, rev, errText string) sources.Status {
		return sources.Status{Name: name, Type: typ, Revision: rev, Error: errText, LastSuccess: at}
	}

	release(relOld, at.Add(-time.Hour))
	release(relNew, at)
	report("web-1", true, api.Document{
		Labels:   map[string]string{"role": "web"},
		LastSync: hsync.SyncInfo{Start: at},
		Sources:  []sources.Status{src("local", "file", "abc", ""), src("fleet", "git", relNew, "")},
		Pods: []hsync.PodStatus{
			pod("a", hsync.PhaseRunning, hsync.RolloutComplete), pod("b", hsync.PhaseRunning, ""),
			pod("c", hsync.PhaseRunning, ""), pod("d", hsync.PhaseFailed, hsync.RolloutRolledBack),
		},
	})
	report("web-2", false, api.Document{
		Labels:   map[string]string{"role": "web"},
		LastSync: hsync.SyncInfo{Start: at, Error: "apply failed"},
		Sources:  []sources.Status{src("fleet", "git", relOld, "watch: etcd unavailable")},
		Pods:     []hsync.PodStatus{pod("a", hsync.PhasePending, "")},
		Rejected: []validate.Rejection{{ID: "x", Source: "fleet", Reasons: []string{"bad"}}},
	})
	report("db-1", true, api.Document{
		Labels:   map[string]string{"role": "db"},
		LastSync: hsync.SyncInfo{Start: at},
		Sources:  []sources.Status{src("fleet", "git", relNew, "")},
		Pods:     []hsync.PodStatus{pod("pg", hsync.PhaseRunning, "")},
	})
	statusKey, aliveKey, _ := reporter.Keys(prefix, "broken")
	etcdtest.Put(t, cli, statusKey, `{"hostname": "broken", "pods": {`)
	etcdtest.Put(t, cli, aliveKey, "x")

	cfgFile := writeFile(t, t.TempDir(), "ops.yaml", fmt.Sprintf("hostname: ops-1\netcd: {endpoints: [%s], prefix: %s}\n", etcd.Endpoint, prefix))

	res := runCLI(t, "fleet", "status", "--config", cfgFile)
	t.Logf("hostlet fleet status:\n%s", res.stdout)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	wantLines := []string{
		`^latest release: 222222222222 \(2026-12-05T01:02:03Z, Complete\); 4 hosts, 2 behind$`,
		`^$`,
		`^HOST +ALIVE +REVISION +PODS +LAST SYNC +ERRORS +ROLLBACKS$`,
		`^broken \(behind\) +yes +- +- +- +status unreadable +-$`,
		`^web-2 \(behind\) +no +111111111111 +1 pending +2026-12-05T01:02:03Z error +2 +0$`,
		`^db-1 +yes +222222222222 +1 running +2026-12-05T01:02:03Z +0 +0$`,
		`^web-1 +yes +222222222222 +3 running, 1 failed +2026-12-05T01:02:03Z +0 +1$`,
		`^$`,
		`^unreadable status:$`,
		`^  broken: status does not decode: unexpected end of JSON input$`,
	}
	if len(lines) != len(wantLines) {
		t.Fatalf("%d lines, want %d", len(lines), len(wantLines))
	}
	for i, w := range wantLines {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("line %d: %q, want %s", i, lines[i], w)
		}
	}

	// -o json, the flags overriding the config, a selector.
	res = runCLI(t, "fleet", "status", "--etcd-endpoints", etcd.Endpoint, "--etcd-prefix", prefix, "--selector", "role=web", "-o", "json")
	if res.code != 0 {
		t.Fatalf("-o json: exit %d: %s", res.code, res.stderr)
	}
	var got struct {
		LatestRelease string `json:"latestRelease"`
		Hosts         []struct {
			Host      string            `json:"host"`
			Alive     bool              `json:"alive"`
			Labels    map[string]string `json:"labels"`
			Revision  string            `json:"revision"`
			Behind    bool              `json:"behind"`
			Pods      map[string]int    `json:"pods"`
			LastSync  struct{ Error string }
			Errors    int    `json:"errors"`
			Rollbacks int    `json:"rollbacks"`
			Error     string `json:"error"`
		} `json:"hosts"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, res.stdout)
	}
	if got.LatestRelease != relNew || len(got.Hosts) != 2 {
		t.Fatalf("-o json: %s", res.stdout)
	}
	w2, w1 := got.Hosts[0], got.Hosts[1]
	if w2.Host != "web-2" || w2.Alive || !w2.Behind || w2.Revision != relOld || w2.Pods["Pending"] != 1 || w2.Errors != 2 || w2.LastSync.Error != "apply failed" {
		t.Errorf("web-2: %+v", w2)
	}
	if w1.Host != "web-1" || !w1.Alive || w1.Behind || w1.Revision != relNew || w1.Pods["Running"] != 3 || w1.Pods["Failed"] != 1 ||
		w1.Rollbacks != 1 || w1.Labels["role"] != "web" || w1.Error != "" {
		t.Errorf("web-1: %+v", w1)
	}
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "cannot be read: broken") {
		t.Errorf("notes %q, want one on the unreadable host", got.Notes)
	}
}

// TestFleetStatusNoRelease: without a release record no host is behind;
// an empty prefix says so; bad flags are refused.
func TestFleetStatusNoRelease(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	statusKey, _, _ := reporter.Keys("/hostlet", "h1")
	etcdtest.Put(t, cli, statusKey, `{"hostname":"h1","sources":[{"name":"s","type":"etcd","revision":"42"}],"pods":[]}`)

	res := runCLI(t, "fleet", "status", "--etcd-endpoints", etcd.Endpoint)
	if res.code != 0 || !strings.Contains(res.stdout, "latest release: none; 1 hosts, 0 behind") ||
		!regexp.MustCompile(`(?m)^h1 +no +42 +none +never +0 +0$`).MatchString(res.stdout) {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, "fleet", "status", "--etcd-endpoints", etcd.Endpoint, "--etcd-prefix", "/other")
	if res.code != 0 || !strings.Contains(res.stdout, "no host reports under /other/status/") {
		t.Errorf("empty prefix: exit %d, stdout:\n%s", res.code, res.stdout)
	}
	res = runCLI(t, "fleet", "status", "--etcd-endpoints", etcd.Endpoint, "--selector", "Role=x")
	if res.code != 1 || !strings.Contains(res.stderr, "not a label key") {
		t.Errorf("bad selector: exit %d, stderr %q", res.code, res.stderr)
	}
	res = runCLI(t, "fleet", "status", "--etcd-endpoints", etcd.Endpoint, "-o", "yaml")
	if res.code != 1 || !strings.Contains(res.stderr, "text or json") {
		t.Errorf("-o yaml: exit %d, stderr %q", res.code, res.stderr)
	}
}
