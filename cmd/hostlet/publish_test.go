package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/release"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

const publishPrefix = "/hostlet"

// pubFleet is a fleet repository, an etcd and three host configs whose
// git source "fleet" reads via etcd: web-1 (role canary), web-2 and
// web-3 (role web).
type pubFleet struct {
	root    string
	repo    *gitRepo
	etcd    *etcdtest.Server
	cli     *clientv3.Client
	configs []string
}

var pubHosts = []string{"web-1", "web-2", "web-3"}

func newPubFleet(t *testing.T) *pubFleet {
	t.Helper()
	// The git source's URL: a publisher reads the checkout, never this.
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("hostlet contacted the git source's URL: %s %s", r.Method, r.URL)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(trap.Close)
	root := t.TempDir()
	srv := etcdtest.Start(t)
	f := &pubFleet{root: root, repo: newGitRepo(t, filepath.Join(root, "fleet")), etcd: srv, cli: srv.Client(t)}
	writeFile(t, f.repo.dir, "common/node-info.yaml", nodeInfoYAML)
	for _, host := range pubHosts {
		role := "web"
		if host == "web-1" {
			role = "canary"
		}
		writeFile(t, f.repo.dir, "hosts/"+host+"/web.yaml", pubPodYAML("web", "example.org/shop/web:1.0"))
		f.configs = append(f.configs, writeFile(t, root, "hostlet/"+host+".yaml", fmt.Sprintf(`hostname: %s
stateDir: %s/state-%s
listen: ""
labels: {role: %s}
etcd:
  endpoints: [%s]
  prefix: %s
sources:
  - name: fleet
    type: git
    via: etcd
    url: %s/ops/fleet.git
    ref: main
    paths: [common, "hosts/{{.Hostname}}"]
  - name: local
    type: file
    path: %s/local
`, host, root, host, role, srv.Endpoint, publishPrefix, trap.URL, root)))
	}
	writeFile(t, root, "local/.keep", "")
	return f
}

// publish runs hostlet publish of rev for every host with extra flags.
func (f *pubFleet) publish(t *testing.T, rev string, extra ...string) cliResult {
	t.Helper()
	args := []string{"publish", "--source", "fleet=" + f.repo.dir}
	if rev != "" {
		args = append(args, "--ref", rev)
	}
	for _, c := range f.configs {
		args = append(args, "--config", c)
	}
	return runCLI(t, append(args, extra...)...)
}

// storeRev is etcd's store revision: it moves with every write.
func (f *pubFleet) storeRev(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := f.cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// get returns key's value and mod revision; ok false when absent.
func (f *pubFleet) get(t *testing.T, key string) (value []byte, modRev int64, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := f.cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, false
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, true
}

// published decodes what etcd holds for host's source fleet.
func (f *pubFleet) published(t *testing.T, host string) (fleet.Published, bool) {
	t.Helper()
	b, _, ok := f.get(t, fleet.DesiredKey(publishPrefix, host, "fleet"))
	if !ok {
		return fleet.Published{}, false
	}
	p, err := fleet.DecodePublished(b, "fleet")
	if err != nil {
		t.Fatalf("host %s: %v", host, err)
	}
	return p, true
}

func (f *pubFleet) release(t *testing.T, sha string) fleet.Release {
	t.Helper()
	b, _, ok := f.get(t, fleet.ReleaseKey(publishPrefix, sha))
	if !ok {
		t.Fatalf("no release record at %s", fleet.ReleaseKey(publishPrefix, sha))
	}
	var rel fleet.Release
	if err := json.Unmarshal(b, &rel); err != nil {
		t.Fatal(err)
	}
	return rel
}

// fakeHosts stands in for the hosts' agents: on every set published for
// a host it writes the host's status document to <prefix>/status/<host>,
// as the reporter does, reporting the release on source fleet and each
// pod's rollout in the state rollout(host, pod, release) gives. It stops when the test
// ends.
func (f *pubFleet) fakeHosts(t *testing.T, rollout func(host, pod, release string) string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	from := f.storeRev(t) + 1
	watch := f.cli.Watch(ctx, publishPrefix+"/desired/", clientv3.WithPrefix(), clientv3.WithRev(from))
	wg.Go(func() {
		for wresp := range watch {
			for _, ev := range wresp.Events {
				parts := strings.Split(strings.TrimPrefix(string(ev.Kv.Key), publishPrefix+"/desired/"), "/")
				if ev.Type != clientv3.EventTypePut || len(parts) != 2 {
					continue
				}
				host := parts[0]
				p, err := fleet.DecodePublished(ev.Kv.Value, parts[1])
				if err != nil {
					t.Errorf("host %s: %v", host, err)
					continue
				}
				doc := api.Document{Hostname: host, Time: time.Now().UTC(), Sources: []sources.Status{{Name: p.Source, Type: "git", Revision: p.Release, Delivered: true}}}
				for _, m := range p.Manifests {
					state := rollout(host, m.Manifest.ID, p.Release)
					ps := hsync.PodStatus{ID: m.Manifest.ID, Source: p.Source, Revision: p.Release, Phase: hsync.PhaseRunning,
						Rollout: &hsync.Rollout{State: state, Revision: p.Release, Hash: manifest.PodHash(m.Manifest.WithDefaults()), Since: time.Now().UTC()}}
					if state == hsync.RolloutRolledBack {
						ps.Rollout.Reason = "readiness probe failed 3 times"
					}
					doc.Pods = append(doc.Pods, ps)
				}
				b, err := json.Marshal(doc)
				if err != nil {
					t.Error(err)
					continue
				}
				key, _, _ := reporter.Keys(publishPrefix, host)
				pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
				_, err = f.cli.Put(pctx, key, string(b))
				pcancel()
				if err != nil && ctx.Err() == nil {
					t.Errorf("put status of %s: %v", host, err)
				}
			}
		}
	})
}

func complete(string, string, string) string { return hsync.RolloutComplete }

// TestPublishWritesEachHost: publish writes each host's set (what its
// via: etcd source reads at the commit, {{.Hostname}} paths expanded)
// and a release record; publishing the same commit again writes nothing
// ("0 hosts changed"); a commit that changes one host's manifests
// publishes it to every host; the hosts' other sources are not published.
func TestPublishWritesEachHost(t *testing.T) {
	f := newPubFleet(t)
	f.fakeHosts(t, complete)
	sha := f.repo.commit("three hosts")

	r := f.publish(t, "main")
	if r.code != 0 {
		t.Fatalf("publish: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "3 hosts changed.") {
		t.Errorf("publish does not say 3 hosts changed:\n%s", r.stdout)
	}
	for _, host := range pubHosts {
		p, ok := f.published(t, host)
		if !ok {
			t.Fatalf("host %s: nothing published", host)
		}
		if p.Release != sha || p.Source != "fleet" || p.Files != 2 {
			t.Errorf("host %s: release %s, source %s, %d files; want %s, fleet, 2", host, p.Release, p.Source, p.Files, sha)
		}
		var got []string
		for _, m := range p.Manifests {
			got = append(got, m.Manifest.ID+"@"+m.Origin.File)
		}
		want := []string{"node-info@common/node-info.yaml", "web@hosts/" + host + "/web.yaml"}
		if !slices.Equal(got, want) {
			t.Errorf("host %s: manifests %v, want %v", host, got, want)
		}
	}
	rel := f.release(t, sha)
	if rel.Rev != sha || rel.Ref != "main" || rel.State != fleet.StateComplete || !slices.Equal(rel.HostsChanged, pubHosts) {
		t.Errorf("release record: %+v", rel)
	}
	if len(rel.Waves) != 1 || rel.Waves[0].Name != "all" || rel.Waves[0].State != fleet.StateComplete {
		t.Errorf("release record's waves: %+v", rel.Waves)
	}

	// The same commit again: nothing written.
	before := f.storeRev(t)
	r = f.publish(t, sha)
	if r.code != 0 || !strings.Contains(r.stdout, "0 hosts changed.") {
		t.Errorf("publish again: exit %d, want 0 and \"0 hosts changed.\"\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := f.storeRev(t); after != before {
		t.Errorf("publish of the same commit wrote to etcd: store revision %d -> %d", before, after)
	}

	// A commit that changes web-2's manifests only: every host is written
	// the new release (each reports the latest), web-2 with its new image.
	writeFile(t, f.repo.dir, "hosts/web-2/web.yaml", pubPodYAML("web", "example.org/shop/web:2.0"))
	sha2 := f.repo.commit("web 2.0 on web-2")
	r = f.publish(t, "main", "-o", "json")
	if r.code != 0 {
		t.Fatalf("publish web-2's change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep release.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("publish -o json: %v\n%s", err, r.stdout)
	}
	if rep.Release.Rev != sha2 || !slices.Equal(rep.Release.HostsChanged, pubHosts) || rep.Release.State != fleet.StateComplete {
		t.Errorf("publish -o json: release %+v", rep.Release)
	}
	for _, host := range pubHosts {
		want := "example.org/shop/web:1.0"
		if host == "web-2" {
			want = "example.org/shop/web:2.0"
		}
		if p, _ := f.published(t, host); p.Release != sha2 || p.Manifests[1].Manifest.Containers[0].Image != want {
			t.Errorf("%s holds release %s, image %s; want %s, %s", host, p.Release, p.Manifests[1].Manifest.Containers[0].Image, sha2, want)
		}
	}
	if _, _, ok := f.get(t, fleet.DesiredKey(publishPrefix, "web-1", "local")); ok {
		t.Errorf("the local file source was published")
	}
}

// TestPublishInvalidWritesNothing: one host's set is invalid (a manifest
// rejected, one that does not decode): every error is printed with the
// host and source:file, exit 1, and nothing is written for any host.
func TestPublishInvalidWritesNothing(t *testing.T) {
	f := newPubFleet(t)
	writeFile(t, f.repo.dir, "hosts/web-2/api.yaml", `version: v1beta1
id: api
containers:
  - name: api
    image: example.org/shop/api:1.0
    ports:
      - {containerPort: 9100, hostPort: 70000}
`)
	writeFile(t, f.repo.dir, "hosts/web-3/broken.yaml", "version: v1beta1\nid: broken\ncontainers: [\n")
	f.repo.commit("two bad hosts")
	before := f.storeRev(t)
	r := f.publish(t, "main")
	if r.code != 1 {
		t.Fatalf("publish of invalid sets: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"host web-2: fleet:hosts/web-2/api.yaml: pod \"api\": containers[0].ports[0].hostPort", "host web-3: fleet:hosts/web-3/broken.yaml", "nothing published"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish output lacks %q:\n%s", want, r.stdout)
		}
	}
	if after := f.storeRev(t); after != before {
		t.Errorf("publish of invalid sets wrote to etcd: store revision %d -> %d", before, after)
	}
}

// TestPublishWaves: the canary wave is written and completes (its host
// reports the release, pods Complete) before the next wave is written.
func TestPublishWaves(t *testing.T) {
	f := newPubFleet(t)
	f.fakeHosts(t, complete)
	sha := f.repo.commit("three hosts")
	r := f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *")
	if r.code != 0 {
		t.Fatalf("publish in waves: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"wave canary (role=canary): changes web-1", "wave rest (*): changes web-2, web-3", "wave canary: complete", "wave rest: complete", "3 hosts changed."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The rest was written after the canary reported.
	canaryStatus, _, _ := reporter.Keys(publishPrefix, "web-1")
	_, reported, _ := f.get(t, canaryStatus)
	for _, host := range []string{"web-2", "web-3"} {
		_, written, ok := f.get(t, fleet.DesiredKey(publishPrefix, host, "fleet"))
		if !ok || written < reported {
			t.Errorf("host %s of wave rest written at revision %d, before the canary reported (%d)", host, written, reported)
		}
	}
	rel := f.release(t, sha)
	if rel.State != fleet.StateComplete || len(rel.Waves) != 2 || rel.Waves[0].State != fleet.StateComplete || rel.Waves[1].State != fleet.StateComplete {
		t.Errorf("release record: %+v", rel)
	}
}

// TestPublishCanaryRollsBack: the canary rolls the release back: exit 1,
// the rest not written, the release record says why; publishing the same
// commit again is refused; --resume after a fix on the canary goes on.
func TestPublishCanaryRollsBack(t *testing.T) {
	f := newPubFleet(t)
	var fixed atomic.Bool
	f.fakeHosts(t, func(host, pod, _ string) string {
		if host == "web-1" && pod == "web" && !fixed.Load() {
			return hsync.RolloutRolledBack
		}
		return hsync.RolloutComplete
	})
	sha := f.repo.commit("three hosts")
	r := f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *")
	if r.code != 1 {
		t.Fatalf("publish with a canary that rolls back: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "host web-1: pod web rolled back: readiness probe failed") {
		t.Errorf("the error does not say the canary rolled back:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "waves not written: rest") {
		t.Errorf("the output does not say which waves were not written:\n%s", r.stdout)
	}
	for _, host := range []string{"web-2", "web-3"} {
		if _, ok := f.published(t, host); ok {
			t.Errorf("host %s of wave rest was written after the canary rolled back", host)
		}
	}
	rel := f.release(t, sha)
	if rel.State != fleet.StateHalted || !strings.Contains(rel.Reason, "wave canary: host web-1: pod web rolled back") {
		t.Errorf("release record: state %s, reason %q", rel.State, rel.Reason)
	}
	if len(rel.Waves) != 2 || rel.Waves[0].State != fleet.StateHalted || rel.Waves[1].State != fleet.StatePending {
		t.Errorf("release record's waves: %+v", rel.Waves)
	}

	// Publishing the halted release again does not push it on to the
	// rest (the canary, which has it, would not be waited for).
	r = f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *")
	if r.code != 1 || !strings.Contains(r.stderr, "halted") {
		t.Errorf("publish of a halted release again: exit %d, want 1 saying it halted\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, ok := f.published(t, "web-2"); ok {
		t.Errorf("publishing the halted release again wrote wave rest")
	}

	// Fixed on the canary (it now reports the release Complete):
	// --resume waits for it again, then writes the rest.
	fixed.Store(true)
	p, _ := f.published(t, "web-1")
	doc := api.Document{Hostname: "web-1", Sources: []sources.Status{{Name: "fleet", Revision: sha}}}
	for _, m := range p.Manifests {
		doc.Pods = append(doc.Pods, hsync.PodStatus{ID: m.Manifest.ID, Source: "fleet", Revision: sha, Phase: hsync.PhaseRunning, Rollout: &hsync.Rollout{State: hsync.RolloutComplete, Revision: sha, Hash: manifest.PodHash(m.Manifest.WithDefaults())}})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	canaryStatus, _, _ := reporter.Keys(publishPrefix, "web-1")
	etcdtest.Put(t, f.cli, canaryStatus, string(b))
	r = f.publish(t, "", "--resume", "main")
	if r.code != 0 {
		t.Fatalf("publish --resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"resuming release " + sha[:7], "wave canary: written (0 hosts, 1 host written before)", "wave rest: complete"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish --resume output lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, host := range []string{"web-2", "web-3"} {
		if p, ok := f.published(t, host); !ok || p.Release != sha {
			t.Errorf("host %s not written by --resume", host)
		}
	}
	rel = f.release(t, sha)
	if rel.State != fleet.StateComplete || rel.Waves[0].State != fleet.StateComplete || rel.Waves[1].State != fleet.StateComplete || !slices.Equal(rel.HostsChanged, pubHosts) {
		t.Errorf("release record after --resume: %+v", rel)
	}
	if r = f.publish(t, "", "--resume", "main"); r.code != 0 || !strings.Contains(r.stdout, "nothing to resume") {
		t.Errorf("--resume of a complete release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestPublishSilentHost: a host that never reports halts the release
// after --wave-timeout.
func TestPublishSilentHost(t *testing.T) {
	f := newPubFleet(t)
	f.repo.commit("three hosts")
	r := f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *", "--wave-timeout", "500ms")
	if r.code != 1 || !strings.Contains(r.stderr, "not reported within --wave-timeout 500ms: web-1: no status reported") {
		t.Errorf("publish to a silent canary: exit %d, want 1 and the host named\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, ok := f.published(t, "web-2"); ok {
		t.Errorf("wave rest was written after the canary stayed silent")
	}
}

// TestPublishDryRun prints the plan and writes nothing; a host that no
// wave picks is an error before anything is written.
func TestPublishDryRun(t *testing.T) {
	f := newPubFleet(t)
	f.repo.commit("three hosts")
	before := f.storeRev(t)
	r := f.publish(t, "main", "--dry-run", "--wave", "canary: role=canary", "--wave", "rest: *")
	if r.code != 0 {
		t.Fatalf("publish --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"wave canary (role=canary): changes web-1", "wave rest (*): changes web-2, web-3", "Dry run: 3 hosts would change; nothing written."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish --dry-run output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = f.publish(t, "main", "--wave", "canary: role=canary")
	if r.code != 1 || !strings.Contains(r.stderr, "no wave picks host(s) web-2, web-3") {
		t.Errorf("publish with hosts no wave picks: exit %d, want 1 naming them\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := f.storeRev(t); after != before {
		t.Errorf("publish --dry-run wrote to etcd: store revision %d -> %d", before, after)
	}
}

func pubPodYAML(id, image string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\ncontainers:\n  - name: app\n    image: %s\n", id, image)
}

// TestPublishAbort: a release whose canary rolls back is taken back with
// --abort: the release before it is published again to the canary (the
// rest still hold it and are not written), and the record says Aborted.
func TestPublishAbort(t *testing.T) {
	f := newPubFleet(t)
	var bad atomic.Value
	bad.Store("")
	f.fakeHosts(t, func(host, pod, release string) string {
		if host == "web-1" && pod == "web" && release == bad.Load() {
			return hsync.RolloutRolledBack
		}
		return hsync.RolloutComplete
	})
	sha1 := f.repo.commit("web 1.0")
	if r := f.publish(t, "main"); r.code != 0 {
		t.Fatalf("publish %s: exit %d\n%s%s", sha1, r.code, r.stdout, r.stderr)
	}
	writeFile(t, f.repo.dir, "common/extra.yaml", pubPodYAML("extra", "example.org/ops/extra:1.0"))
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", pubPodYAML("web", "example.org/shop/web:2.0"))
	sha2 := f.repo.commit("extra everywhere, web 2.0 on web-1")
	bad.Store(sha2)
	if r := f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *"); r.code != 1 {
		t.Fatalf("publish %s: exit %d, want 1 (the canary rolls back)\n%s%s", sha2, r.code, r.stdout, r.stderr)
	}
	_, rest, _ := f.get(t, fleet.DesiredKey(publishPrefix, "web-2", "fleet"))

	before := f.storeRev(t)
	r := f.publish(t, "", "--abort", sha2[:10], "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "Dry run: 1 host would change") {
		t.Errorf("publish --abort --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := f.storeRev(t); after != before {
		t.Errorf("publish --abort --dry-run wrote to etcd: store revision %d -> %d", before, after)
	}
	r = f.publish(t, "", "--abort", sha2[:10])
	if r.code != 0 {
		t.Fatalf("publish --abort: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"aborting release " + sha2[:7] + ": publishing " + sha1[:7] + " again", "1 host changed.", "release " + sha2[:7] + " aborted."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish --abort output lacks %q:\n%s", want, r.stdout)
		}
	}
	if p, _ := f.published(t, "web-1"); p.Release != sha1 || len(p.Manifests) != 2 {
		t.Errorf("web-1 holds release %s with %d manifests after --abort; want %s with 2", p.Release, len(p.Manifests), sha1)
	}
	if _, rev, _ := f.get(t, fleet.DesiredKey(publishPrefix, "web-2", "fleet")); rev != rest {
		t.Errorf("--abort wrote web-2, which never got the aborted release")
	}
	if rel := f.release(t, sha2); rel.State != fleet.StateAborted {
		t.Errorf("the aborted release's record: state %s, reason %q", rel.State, rel.Reason)
	}
	if r := f.publish(t, "", "--abort", sha2); r.code != 1 || !strings.Contains(r.stderr, "is Aborted") {
		t.Errorf("--abort twice: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestPublishMaxUnavailable: --max-unavailable 1 writes a wave one host at
// a time, each written after the one before reported the release.
func TestPublishMaxUnavailable(t *testing.T) {
	f := newPubFleet(t)
	f.fakeHosts(t, complete)
	f.repo.commit("three hosts")
	r := f.publish(t, "main", "--max-unavailable", "1")
	if r.code != 0 {
		t.Fatalf("publish --max-unavailable 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"wave all (hosts 1-1 of 3): written (1 host)", "wave all (hosts 3-3 of 3): written (1 host)", "wave all: complete", "3 hosts changed."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("publish --max-unavailable output lacks %q:\n%s", want, r.stdout)
		}
	}
	for i := 1; i < len(pubHosts); i++ {
		status, _, _ := reporter.Keys(publishPrefix, pubHosts[i-1])
		_, reported, _ := f.get(t, status)
		_, written, _ := f.get(t, fleet.DesiredKey(publishPrefix, pubHosts[i], "fleet"))
		if written < reported {
			t.Errorf("host %s written at revision %d, before %s reported (%d)", pubHosts[i], written, pubHosts[i-1], reported)
		}
	}
}

// TestPublishToAgent publishes to a real hostlet (Docker engine, etcd):
// the host reads its via: etcd source, runs the pod and reports it; the
// release completes. A commit whose pod cannot start is rolled back by
// the host (Failed, then RolledBack), and the release halts saying so.
func TestPublishToAgent(t *testing.T) {
	image := dockertest.TestImage(t)
	instance := dockertest.Instance(t)
	srv := etcdtest.Start(t)
	root := t.TempDir()
	repo := newGitRepo(t, filepath.Join(root, "fleet"))
	pod := func(extra string) string {
		return strings.Replace(dockertest.PausePod("web", image, extra), "id: web\n", "id: web\nminReadySeconds: 1\n", 1)
	}
	writeFile(t, repo.dir, "hosts/pub-e2e/web.yaml", pod(""))
	sha1 := repo.commit("web")
	hostCfg := writeFile(t, root, "pub-e2e.yaml", fmt.Sprintf(`hostname: pub-e2e
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
docker: {infraImage: %s}
sync: {interval: 1s}
etcd: {endpoints: [%s], prefix: %s}
sources:
  - name: fleet
    type: git
    via: etcd
    url: http://127.0.0.1:1/fleet.git
    ref: main
    paths: ["hosts/{{.Hostname}}"]
`, instance, filepath.Join(root, "state"), testkit.FreePort(t), image, srv.Endpoint, publishPrefix))
	cfg, err := config.Load(hostCfg)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Start(t, cfg, nil)

	publish := func() cliResult {
		return runCLI(t, "publish", "--config", hostCfg, "--source", "fleet="+repo.dir, "--ref", "main", "--wave-timeout", "90s")
	}
	r := publish()
	if r.code != 0 || !strings.Contains(r.stdout, "1 host changed.") {
		t.Fatalf("publish %s to a real host: exit %d\n%s%s", sha1[:7], r.code, r.stdout, r.stderr)
	}

	// A version that cannot start: the host rolls it back, the release
	// halts.
	writeFile(t, repo.dir, "hosts/pub-e2e/web.yaml", fmt.Sprintf(`version: v1beta1
id: web
minReadySeconds: 1
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: [/nonexistent]
`, image))
	sha2 := repo.commit("web cannot start")
	r = publish()
	// The host reports the pod Failed (StartError), then RolledBack:
	// either halts the release.
	halted := strings.Contains(r.stderr, "host pub-e2e: pod web failed: StartError: container app") || strings.Contains(r.stderr, "host pub-e2e: pod web rolled back")
	if r.code != 1 || !halted {
		t.Fatalf("publish %s, cannot start: exit %d, want 1 saying web failed or rolled back\n%s%s", sha2[:7], r.code, r.stdout, r.stderr)
	}
}

// TestPublishInterruptedRelease: a release whose record still says
// Waiting (an earlier publish of it stopped before its waves ended) is
// not published again as if new (its written hosts would count as
// unchanged and their waits, the canary's included, be skipped):
// --resume goes on with it.
func TestPublishInterruptedRelease(t *testing.T) {
	f := newPubFleet(t)
	sha := f.repo.commit("three hosts")
	etcdtest.Put(t, f.cli, fleet.ReleaseKey(publishPrefix, sha), fmt.Sprintf(`{"rev": %q, "ref": "main", "time": "2026-12-05T14:00:00Z", "updated": "2026-12-05T14:00:00Z", "state": "Waiting", "hostsChanged": ["web-1"], "waves": [{"name": "canary", "selector": "role=canary", "hosts": ["web-1"], "changed": ["web-1"], "state": "Waiting"}, {"name": "rest", "selector": "*", "hosts": ["web-2", "web-3"], "changed": [], "state": ""}]}`, sha))
	before := f.storeRev(t)
	r := f.publish(t, "main", "--wave", "canary: role=canary", "--wave", "rest: *")
	if r.code != 1 || !strings.Contains(r.stderr, "still Waiting") || !strings.Contains(r.stderr, "--resume") || strings.Contains(r.stdout, "changed.") {
		t.Fatalf("publish of an interrupted release: exit %d, want 1 pointing to --resume\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := f.storeRev(t); after != before {
		t.Fatalf("the refused publish wrote to etcd: store revision %d -> %d", before, after)
	}
}
