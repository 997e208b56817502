package sources

import (
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/manifest"
)

// published encodes a published set of source fleet holding pods (id=v).
func published(t *testing.T, release, v string, ids ...string) string {
	t.Helper()
	ms, err := manifest.Decode([]byte(podListYAML(v, ids...)), manifest.Origin{Source: "fleet", File: "hosts/h1/pods.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fleet.EncodePublished(fleet.Published{Release: release, Source: "fleet", Files: 1, Manifests: ms})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPublishedSource: a git source with via: etcd watches the host's
// desired key, delivers the published set with the release's revision
// (the git commit), sees each new publish, and keeps its last good set
// when the value is not a published set (the error says so).
func TestPublishedSource(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	key := fleet.DesiredKey("/hostlet", "h1", "fleet")
	etcdtest.Put(t, cli, key, published(t, "1111111111111111111111111111111111111111", "1", "web", "api"))
	src := NewPublished(config.Source{Name: "fleet", Type: config.TypeGit, Via: config.ViaEtcd, Timeout: time.Second, Interval: 500 * time.Millisecond}, cli, key, testLogger(t))
	if src.Type() != config.TypeGit || src.Name() != "fleet" {
		t.Fatalf("source %s of type %s, want fleet of type git", src.Name(), src.Type())
	}
	h := startSources(t, MergeOptions{}, src)
	h.waitSet(t, 10*time.Second, []string{"web=1", "api=1"}, "1111111111111111111111111111111111111111")

	etcdtest.Put(t, cli, key, published(t, "2222222222222222222222222222222222222222", "2", "web"))
	h.waitSet(t, 10*time.Second, []string{"web=2"}, "2222222222222222222222222222222222222222")

	// Not a published set: an error, the last good set kept.
	etcdtest.Put(t, cli, key, podListYAML("3", "evil"))
	st := h.waitErr(t, 10*time.Second, 0, "not a set hostlet publish wrote")
	sameSet(t, st, []string{"web=2"}, "2222222222222222222222222222222222222222")

	// Another host's or source's key changes nothing.
	etcdtest.Put(t, cli, fleet.DesiredKey("/hostlet", "h10", "fleet"), published(t, "3333333333333333333333333333333333333333", "9", "other"))
	etcdtest.Put(t, cli, key, published(t, "4444444444444444444444444444444444444444", "4", "web", "db"))
	h.waitSet(t, 10*time.Second, []string{"web=4", "db=4"}, "4444444444444444444444444444444444444444")
}
