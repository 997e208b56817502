package release

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestPublishReleaseProgress: where a host's status document puts it in a
// release: done, waiting (why) or halting (why).
func TestPublishReleaseProgress(t *testing.T) {
	const rev, old = "2222222222222222222222222222222222222222", "1111111111111111111111111111111111111111"
	pods := map[string]string{"web": "v1:new"}
	src := func(r string) []sources.Status { return []sources.Status{{Name: "fleet", Revision: r}} }
	pod := func(phase, state, hash, prevHash, revision string) hsync.PodStatus {
		p := hsync.PodStatus{ID: "web", Source: "fleet", Revision: revision, Phase: phase, Reason: "StartError", Message: "StartError: container app: start failed"}
		if state != "" {
			p.Rollout = &hsync.Rollout{State: state, Revision: revision, Hash: hash, PreviousHash: prevHash, Reason: "why"}
		}
		return p
	}
	for _, tc := range []struct {
		name          string
		doc           api.Document
		done          bool
		halt, waiting string
	}{
		{name: "complete", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutComplete, "v1:new", "", rev)}}, done: true},
		{name: "source behind", doc: api.Document{Sources: src(old), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutComplete, "v1:old", "", old)}}, waiting: "source fleet at 1111111"},
		{name: "no such source", doc: api.Document{}, waiting: "source fleet not in its status"},
		{name: "pod not synced yet", doc: api.Document{Sources: src(rev)}, waiting: "pod web not reported yet"},
		{name: "old version", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutComplete, "v1:old", "", old)}}, waiting: "pod web not synced at the release yet"},
		{name: "old version, no rollout", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, "", "", "", old)}}, waiting: "pod web not synced at the release yet"},
		{name: "synced, another hash", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutComplete, "v1:old", "", rev)}}, waiting: "pod web not at the release's version yet"},
		{name: "progressing", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutProgressing, "v1:new", "v1:old", rev)}}, waiting: "pod web rollout Progressing"},
		{name: "rolled back", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutRolledBack, "v1:new", "v1:old", rev)}}, halt: "pod web rolled back: why"},
		{name: "holds back this version", doc: api.Document{Sources: src(old), Pods: []hsync.PodStatus{pod(hsync.PhaseRunning, hsync.RolloutRolledBack, "v1:new", "v1:old", old)}}, halt: "pod web rolled back"},
		{name: "failed, rolling back", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseFailed, hsync.RolloutProgressing, "v1:new", "v1:old", rev)}}, waiting: "pod web failed (StartError); the host rolls it back"},
		{name: "failed, new pod", doc: api.Document{Sources: src(rev), Pods: []hsync.PodStatus{pod(hsync.PhaseFailed, hsync.RolloutProgressing, "v1:new", "", rev)}}, halt: "pod web failed: StartError: container app: start failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, halt, waiting := releaseProgress(tc.doc, rev, []string{"fleet"}, pods)
			if done != tc.done || !strings.Contains(halt, tc.halt) || (tc.halt == "") != (halt == "") || !strings.Contains(waiting, tc.waiting) || (tc.waiting == "") != (waiting == "") {
				t.Errorf("releaseProgress = %v, halt %q, waiting %q; want %v, %q, %q", done, halt, waiting, tc.done, tc.halt, tc.waiting)
			}
		})
	}
}
