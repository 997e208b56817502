package sync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

func attackStatus(s *hsync.Syncer, id string) hsync.PodStatus {
	for _, p := range s.Report().Pods {
		if p.ID == id {
			return p
		}
	}
	return hsync.PodStatus{}
}

func attackCount(fake *synctest.Fake, method string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Two pods that depend on each other (a cycle across manifests, which
// validation, checking one manifest at a time, cannot see) both wait
// forever, "being changed": neither is ever created, and no error names
// the cycle.
func TestAttack2DependsOnCycleDeadlocks(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	a := decodePod(t, "version: v1beta1\nid: a\ndependsOn: [{pod: b}]\ncontainers: [{name: app, image: example.org/a:1}]\n")
	b := decodePod(t, "version: v1beta1\nid: b\ndependsOn: [{pod: a}]\ncontainers: [{name: app, image: example.org/b:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{a, b}, Ready: true})
	for range 5 {
		_ = s.SyncOnce(t.Context())
	}
	created := len(specsOf(t, fake, "a")) + len(specsOf(t, fake, "b"))
	msg := attackStatus(s, "a").Message + " | " + attackStatus(s, "b").Message
	if created == 0 && !strings.Contains(msg, "cycle") {
		t.Errorf("a <-> b: nothing created after 5 syncs and no cycle reported; status: %s", msg)
	}
}

// dependsOn is documented as "wait before creating or recreating", but a
// pod waits for ANY change: its container stopped (by hand, or left
// stopped by an engine restart) is not started again while the pod it
// depends on is being changed, e.g. stuck on a new revision whose image
// does not pull (backoff up to 5 min, for as long as the revision is bad).
func TestAttack2DependsOnBlocksPlainRestart(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	b1 := decodePod(t, "version: v1beta1\nid: b\ncontainers: [{name: app, image: example.org/b:1}]\n")
	a := decodePod(t, "version: v1beta1\nid: a\ndependsOn: [{pod: b}]\ncontainers: [{name: app, image: example.org/a:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{a, b1}, Ready: true})
	for range 2 {
		_ = s.SyncOnce(t.Context())
	}
	if st := attackStatus(s, "a"); st.Phase != hsync.PhaseRunning {
		t.Fatalf("setup: a is %s %q", st.Phase, st.Message)
	}
	// b's new revision does not pull.
	fake.FailPull("example.org/b:2", errors.New("manifest unknown"))
	b2 := decodePod(t, "version: v1beta1\nid: b\ncontainers: [{name: app, image: example.org/b:2}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{a, b2}, Ready: true})
	_ = s.SyncOnce(t.Context())
	// a's container stops.
	list, _ := fake.List(t.Context())
	for _, c := range list {
		if c.Pod() == "a" {
			if err := fake.Stop(t.Context(), c.ID, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		_ = s.SyncOnce(t.Context())
	}
	if st := attackStatus(s, "a"); st.Phase != hsync.PhaseRunning {
		t.Errorf("a (unchanged, only stopped) is not restarted while b's bad revision is pending: %s %s %q", st.Phase, st.Reason, st.Message)
	}
}

// A pod whose new revision drops its network n1 but must wait (dependsOn
// not met; equally while it backs off or pulls) keeps its old container on
// n1 ("what runs of it keeps running"), yet pruneNetworks takes the old
// container's io.hostlet.networks label as "no longer used" on every sync:
// RemoveNetwork(n1) is called each time (2 engine calls on the real
// engine, refused while the container runs, and succeeding when it is
// stopped or between two restarts, so it cannot start again).
func TestAttack2PruneRemovesNetworkOfWaitingPod(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	v1 := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n1}]\ncontainers: [{name: app, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{v1}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	v2 := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n2}]\ndependsOn: [{pod: db}]\ncontainers: [{name: app, image: example.org/web:2}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{v2}, Ready: true})
	fake.Reset()
	for range 3 {
		_ = s.SyncOnce(t.Context())
	}
	spec := specsOf(t, fake, "web")["app"]
	if len(spec.Networks) == 0 || spec.Networks[0].Name != "n1" {
		t.Fatalf("setup: web's old container should still be on n1 (waiting), spec %+v", spec.Networks)
	}
	if !slices.Contains(fake.Networks(), "n1") || attackCount(fake, "RemoveNetwork") > 0 {
		t.Errorf("waiting pod web still runs on n1, yet RemoveNetwork was called %d times in 3 syncs; networks now %v",
			attackCount(fake, "RemoveNetwork"), fake.Networks())
	}
}

// netCheckingFake refuses to start a container whose networks are gone,
// as the engine does ("network n1 not found").
type netCheckingFake struct{ *synctest.Fake }

func (f netCheckingFake) Start(ctx context.Context, id string) error {
	if spec, ok := f.Spec(id); ok {
		for _, n := range spec.Networks {
			if !slices.Contains(f.Networks(), n.Name) {
				return fmt.Errorf("start container %s: network %s not found: %w", id, n.Name, hruntime.ErrNotFound)
			}
		}
	}
	return f.Fake.Start(ctx, id)
}

// A stopped container whose hostlet network went (removed by the prune
// above, by a hand "docker network rm" of a network only stopped
// containers use, ...) is only ever restarted: ensureNetworks runs only
// when the namespace holder is created, so the network is never made
// again and the pod fails to start on every sync until its spec changes.
func TestAttack2RestartNeverRecreatesMissingNetwork(t *testing.T) {
	fake := netCheckingFake{synctest.NewFake()}
	s := newFakeSyncer(t, fake)
	web := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n1}]\ncontainers: [{name: app, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{web}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	list, _ := fake.List(t.Context())
	if err := fake.Fake.Stop(t.Context(), list[0].ID, 0); err != nil {
		t.Fatal(err)
	}
	_ = fake.RemoveNetwork(t.Context(), "n1")
	err := s.SyncOnce(t.Context())
	if st := attackStatus(s, "web"); st.Phase != hsync.PhaseRunning {
		t.Errorf("web not running again after its network went: %s %s %q (sync error %v)", st.Phase, st.Reason, st.Message, err)
	}
}
