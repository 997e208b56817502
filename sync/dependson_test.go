package sync_test

import (
	"errors"
	"strings"
	"testing"

	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// statusOf is pod id's status in s's report (the zero status when the
// report has no such pod).
func statusOf(s *hsync.Syncer, id string) hsync.PodStatus {
	for _, p := range s.Report().Pods {
		if p.ID == id {
			return p
		}
	}
	return hsync.PodStatus{}
}

// TestDependsOnCycleAcrossManifestsNeverWaitsSilently (second outside
// review): two pods that depend on each other (a cycle across manifests,
// which validation, checking one manifest at a time, cannot see) both wait
// forever, "being changed": neither is ever created, and no error names
// the cycle.
func TestDependsOnCycleAcrossManifestsNeverWaitsSilently(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	a := decodePod(t, "version: v1beta1\nid: a\ndependsOn: [{pod: b}]\ncontainers: [{name: app, image: example.org/a:1}]\n")
	b := decodePod(t, "version: v1beta1\nid: b\ndependsOn: [{pod: a}]\ncontainers: [{name: app, image: example.org/b:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{a, b}, Ready: true})
	for range 5 {
		_ = s.SyncOnce(t.Context())
	}
	created := len(specsOf(t, fake, "a")) + len(specsOf(t, fake, "b"))
	msg := statusOf(s, "a").Message + " | " + statusOf(s, "b").Message
	if created == 0 && !strings.Contains(msg, "cycle") {
		t.Errorf("a <-> b: nothing created after 5 syncs and no cycle reported; status: %s", msg)
	}
}

// TestDependsOnNeverHoldsBackAPlainRestart (second outside review):
// dependsOn is documented as "wait before creating or recreating", but a
// pod waits for ANY change: its container stopped (by hand, or left
// stopped by an engine restart) is not started again while the pod it
// depends on is being changed, e.g. stuck on a new revision whose image
// does not pull (backoff up to 5 min, for as long as the revision is bad).
func TestDependsOnNeverHoldsBackAPlainRestart(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	b1 := decodePod(t, "version: v1beta1\nid: b\ncontainers: [{name: app, image: example.org/b:1}]\n")
	a := decodePod(t, "version: v1beta1\nid: a\ndependsOn: [{pod: b}]\ncontainers: [{name: app, image: example.org/a:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{a, b1}, Ready: true})
	for range 2 {
		_ = s.SyncOnce(t.Context())
	}
	if st := statusOf(s, "a"); st.Phase != hsync.PhaseRunning {
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
	if st := statusOf(s, "a"); st.Phase != hsync.PhaseRunning {
		t.Errorf("a (unchanged, only stopped) is not restarted while b's bad revision is pending: %s %s %q", st.Phase, st.Reason, st.Message)
	}
}
