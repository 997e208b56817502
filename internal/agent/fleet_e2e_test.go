package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/etcdtest"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/manifest"
)

// publish writes what `hostlet publish` writes for host test-host's
// source fleet: the pods ids at version v, release rev.
func (e *env) publish(t *testing.T, etcd *etcdtest.Server, rev, v string, ids ...string) {
	t.Helper()
	ms, err := manifest.Decode([]byte(e.podList(v, ids...)), manifest.Origin{Source: "fleet", File: "hosts/test-host/pods.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fleet.EncodePublished(fleet.Published{Release: rev, Source: "fleet", Files: 1, Manifests: ms})
	if err != nil {
		t.Fatal(err)
	}
	etcdtest.Put(t, etcd.Client(t), fleet.DesiredKey("/hostlet", "test-host", "fleet"), string(b))
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
	for _, c := range e.containers(t) {
		if c.Pod == "web" && c.Labels["v"] != "3" {
			t.Fatalf("web runs version %q, want 3", c.Labels["v"])
		}
	}
}
