package agentrun_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/manifest"
)

// publish writes what `hostlet publish` writes for host test-host's
// source fleet: the pods ids at version v, release rev.
func (e *env) publish(t *testing.T, etcd *etcdtest.Server, rev, v string, ids ...string) {
	t.Helper()
	etcdtest.Put(t, etcd.Client(t), fleet.DesiredKey("/hostlet", "test-host", "fleet"), e.publishedSet(t, "test-host", rev, v, ids...))
}

// publishedSet is the published set of source fleet for host: the pods
// ids at version v, release rev.
func (e *env) publishedSet(t *testing.T, host, rev, v string, ids ...string) string {
	t.Helper()
	ms, err := manifest.Decode([]byte(e.podList(v, ids...)), manifest.Origin{Source: "fleet", File: "hosts/" + host + "/pods.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fleet.EncodePublished(fleet.Published{Release: rev, Source: "fleet", Files: 1, Manifests: ms})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGitViaEtcd: a host whose git source says via: etcd never polls the
// repository (its URL does not even resolve): it runs what is published
// for it, follows each publish, reports the release's commit as the
// source's revision and its labels in the status, and, down during a
// publish, converges on it when it comes back.
func TestGitViaEtcd(t *testing.T) {
	e := newEnv(t)
	etcd := etcdtest.Start(t)
	cfg := e.config(t, fmt.Sprintf(`labels: {role: canary}
etcd:
  endpoints: [%s]
sources:
  - {name: fleet, type: git, via: etcd, url: "https://git.invalid/ops/fleet.git", path: "hosts/{{.Hostname}}", interval: 1s, timeout: 2s}
`, etcd.Endpoint))
	const r1, r2, r3 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	e.publish(t, etcd, r1, "1", "web", "api")
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "api", "web")
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		ok, errText, rev := sourceStatus(d, "fleet")
		return ok && errText == "" && rev == r1, fmt.Sprintf("fleet source: revision %q error %q", rev, errText)
	})
	if doc.Labels["role"] != "canary" {
		t.Fatalf("status labels %v, want role=canary", doc.Labels)
	}
	for _, s := range doc.Sources {
		if s.Name == "fleet" && s.Type != "git" {
			t.Fatalf("source fleet of type %s, want git", s.Type)
		}
	}

	e.publish(t, etcd, r2, "2", "web")
	e.waitPods(t, 60*time.Second, "web")
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		_, _, rev := sourceStatus(d, "fleet")
		return rev == r2, fmt.Sprintf("fleet revision %q", rev)
	})

	// Down during a publish: it converges when it returns.
	a.Stop()
	e.publish(t, etcd, r3, "3", "web", "db")
	b := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "db", "web")
	b.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		_, _, rev := sourceStatus(d, "fleet")
		return rev == r3, fmt.Sprintf("fleet revision %q", rev)
	})
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		for _, c := range e.containers(t) {
			if c.Pod == "web" {
				return c.Labels["v"] == "3" && c.State == "running", fmt.Sprintf("web at version %q %s", c.Labels["v"], c.State)
			}
		}
		return false, "no web"
	})
}

// TestViaEtcdClusterMemberLost: two hosts watch a 3-member etcd cluster;
// the member leading it is killed in the middle of a release (after one
// host's key is written, before the other's): the release completes
// through the other members, both hosts converge, and they keep watching
// (a later release reaches both).
func TestViaEtcdClusterMemberLost(t *testing.T) {
	cluster := etcdtest.StartCluster(t, 3)
	cli := cluster.Client(t)
	endpoints := strings.Join(cluster.Endpoints, ", ")
	hosts := []string{"web-1", "web-2"}
	var envs []*env
	var agents []*agenttest.Agent
	for _, h := range hosts {
		e := newEnv(t)
		cfg := e.config(t, fmt.Sprintf(`etcd:
  endpoints: [%s]
sources:
  - {name: fleet, type: git, via: etcd, url: "https://git.invalid/ops/fleet.git", interval: 1s, timeout: 2s}
`, endpoints))
		cfg.Hostname = h
		envs = append(envs, e)
		agents = append(agents, e.start(t, cfg))
	}
	release := func(rev, v string, kill bool) {
		for i, h := range hosts {
			if kill && i == 1 {
				leader := cluster.Leader()
				t.Logf("killing etcd member %d (the leader) mid-release", leader)
				cluster.Stop(max(leader, 0))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_, err := cli.Put(ctx, fleet.DesiredKey("/hostlet", h, "fleet"), envs[i].publishedSet(t, h, rev, v, "app"))
			cancel()
			if err != nil {
				t.Fatalf("publish to %s: %v", h, err)
			}
		}
		for i := range hosts {
			agents[i].WaitStatus(t, 90*time.Second, func(d api.Document) (bool, string) {
				_, errText, got := sourceStatus(d, "fleet")
				return got == rev, fmt.Sprintf("host %s: fleet revision %q error %q", hosts[i], got, errText)
			})
			testkit.WaitFor(t, 90*time.Second, func() (bool, string) {
				cs := envs[i].containers(t)
				return len(cs) == 1 && cs[0].Labels["v"] == v && cs[0].State == "running", fmt.Sprintf("host %s: containers %+v, want app at version %s running", hosts[i], cs, v)
			})
		}
	}
	release("1111111111111111111111111111111111111111", "1", false)
	release("2222222222222222222222222222222222222222", "2", true)
	release("3333333333333333333333333333333333333333", "3", false)
}
