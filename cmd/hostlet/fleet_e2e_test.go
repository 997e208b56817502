package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// e2eFleet is three real hostlets (web-1 the canary, web-2, web-3) on the
// local engine, each its own instance, watching a 3-member etcd cluster
// through a git source with via: etcd, and the fleet repository they are
// published from.
type e2eFleet struct {
	t        *testing.T
	cluster  *etcdtest.Cluster
	repo     *gitRepo
	image    string
	hosts    []string
	cfgFiles []string
	cfgs     map[string]*config.Config
	agents   map[string]*agenttest.Agent
}

func newE2EFleet(t *testing.T) *e2eFleet {
	t.Helper()
	f := &e2eFleet{t: t, cluster: etcdtest.StartCluster(t, 3), image: dockertest.TestImage(t),
		hosts: []string{"web-1", "web-2", "web-3"}, cfgs: map[string]*config.Config{}, agents: map[string]*agenttest.Agent{}}
	root := t.TempDir()
	f.repo = newGitRepo(t, filepath.Join(root, "fleet"))
	for _, h := range f.hosts {
		role := "web"
		if h == "web-1" {
			role = "canary"
		}
		path := writeFile(t, root, "hostlet/"+h+".yaml", fmt.Sprintf(`hostname: %s
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
labels: {role: %s}
docker: {infraImage: %s}
sync: {interval: 1s}
etcd:
  endpoints: [%s]
  prefix: /hostlet
sources:
  - {name: fleet, type: git, via: etcd, url: "https://git.invalid/ops/fleet.git", paths: ["hosts/{{.Hostname}}"], interval: 1s, timeout: 2s}
`, h, dockertest.Instance(t), filepath.Join(root, "state-"+h), testkit.FreePort(t), role, f.image, strings.Join(f.cluster.Endpoints, ", ")))
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		f.cfgFiles, f.cfgs[h] = append(f.cfgFiles, path), cfg
		f.agents[h] = agenttest.Start(t, cfg, nil)
	}
	return f
}

// pod is pod web at version v; crash makes its process exit at once.
func (f *e2eFleet) pod(v string, crash bool) string {
	cmd := "[/demo, pause]"
	if crash {
		cmd = "[/demo, probe-fail]"
	}
	return fmt.Sprintf(`version: v1beta1
id: web
labels: {v: %q}
minReadySeconds: 1
progressDeadlineSeconds: 60
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: %s
`, v, f.image, cmd)
}

// commit writes each host's pod (by host; "" leaves it) and commits.
func (f *e2eFleet) commit(msg string, pods map[string]string) string {
	for h, p := range pods {
		writeFile(f.t, f.repo.dir, "hosts/"+h+"/web.yaml", p)
	}
	return f.repo.commit(msg)
}

func (f *e2eFleet) publish(rev string) cliResult {
	args := []string{"publish", "--source", "fleet=" + f.repo.dir, "--ref", rev, "--wave", "canary: role=canary", "--wave", "rest: *", "--wave-timeout", "90s"}
	for _, c := range f.cfgFiles {
		args = append(args, "--config", c)
	}
	return runCLI(f.t, args...)
}

// released is the release host's key holds ("" when none).
func (f *e2eFleet) released(host string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := f.cluster.Client(f.t).Get(ctx, fleet.DesiredKey("/hostlet", host, "fleet"))
	if err != nil {
		f.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	p, err := fleet.DecodePublished(resp.Kvs[0].Value, "fleet")
	if err != nil {
		f.t.Fatal(err)
	}
	return p.Release
}

// waitVersion waits until host's pod web runs version v.
func (f *e2eFleet) waitVersion(host, v string) {
	f.t.Helper()
	cli := dockertest.Client(f.t)
	testkit.WaitFor(f.t, 90*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+f.cfgs[host].Instance))})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range list {
			if c.Labels[hruntime.LabelPod] == "web" && c.Labels["v"] == v && c.State == "running" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("host %s: web not running at version %s (%d containers)", host, v, len(list))
	})
}

// TestFleetPublishE2E: three real hostlets on the local engine watch a
// 3-member etcd cluster. A commit published in waves converges on every
// host; a commit with one host's set invalid publishes nothing; a canary
// that rolls back halts the release, the other hosts untouched; the
// leading etcd member killed in the middle of a release does not stop it,
// and the hosts keep watching; a host down during a publish converges
// when it returns.
func TestFleetPublishE2E(t *testing.T) {
	f := newE2EFleet(t)
	all := func(v string) map[string]string {
		return map[string]string{"web-1": f.pod(v, false), "web-2": f.pod(v, false), "web-3": f.pod(v, false)}
	}

	c1 := f.commit("v1", all("1"))
	if r := f.publish(c1); r.code != 0 {
		t.Fatalf("publish v1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, h := range f.hosts {
		f.waitVersion(h, "1")
	}

	// An invalid set on one host: nothing is written.
	c2 := f.commit("web-3 broken", map[string]string{"web-1": f.pod("2", false), "web-3": "version: v1beta1\nid: web\ncontainers: []\n"})
	if r := f.publish(c2); r.code != 1 || !strings.Contains(r.stdout+r.stderr, "web-3") {
		t.Fatalf("publish of an invalid set: exit %d, want 1 naming web-3\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, h := range f.hosts {
		if got := f.released(h); got != c1 {
			t.Fatalf("after a refused publish host %s holds release %s, want %s", h, got, c1)
		}
	}

	// The canary's new version crashes: it rolls back, the release halts.
	c3 := f.commit("v3, crashing on the canary", map[string]string{"web-1": f.pod("3", true), "web-2": f.pod("3", false), "web-3": f.pod("3", false)})
	if r := f.publish(c3); r.code != 1 || !strings.Contains(r.stdout+r.stderr, "rolled back") {
		t.Fatalf("publish with a crashing canary: exit %d, want 1 and a rollback\n%s%s", r.code, r.stdout, r.stderr)
	}
	f.waitVersion("web-1", "1")
	for _, h := range []string{"web-2", "web-3"} {
		if got := f.released(h); got != c1 {
			t.Fatalf("after the canary's rollback host %s holds release %s, want %s (untouched)", h, got, c1)
		}
		f.waitVersion(h, "1")
	}

	// The leading member killed mid-release: the release completes.
	c4 := f.commit("v4", all("4"))
	done := make(chan cliResult, 1)
	go func() { done <- f.publish(c4) }()
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		return f.released("web-1") == c4, "the canary wave not written yet"
	})
	leader := f.cluster.Leader()
	t.Logf("killing etcd member %d (the leader) mid-release", leader)
	f.cluster.Stop(max(leader, 0))
	if r := <-done; r.code != 0 {
		t.Fatalf("publish v4 with a member lost: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, h := range f.hosts {
		f.waitVersion(h, "4")
	}

	// A host down during a publish converges when it returns.
	f.agents["web-3"].Stop()
	c5 := f.commit("v5", all("5"))
	go func() { done <- f.publish(c5) }()
	testkit.WaitFor(t, 90*time.Second, func() (bool, string) {
		return f.released("web-3") == c5, "web-3's set not written yet"
	})
	f.agents["web-3"] = agenttest.Start(t, f.cfgs["web-3"], nil)
	if r := <-done; r.code != 0 {
		t.Fatalf("publish v5 with web-3 down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, h := range f.hosts {
		f.waitVersion(h, "5")
	}
}
