package sync

import (
	"context"
	"errors"
	gosync "sync"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// stopMargin is added to a container's stop timeout to bound a stop the
// engine may still be carrying out (see policyMarks.running).
const stopMargin = 5 * time.Second

// policyMarks are the app containers hostlet left with their restart
// policy cleared ("no"), which the list does not tell. hostlet clears it
// to keep a replaced container stopped until its successor starts
// (replace), and before it stops one of restartPolicy OnFailure (stop):
// that app's exit 0 on SIGTERM, with its policy on-failure, would pass
// for a completion. Should such a container stay (hostlet killed or
// stopped before it removed or started it again, the engine refusing
// the removal) and be wanted again, it runs again, with its policy back.
type policyMarks struct {
	// stopped holds, by ID, the stopped ones: the plan starts the one in
	// a desired slot whatever its exit code and its pod's restartPolicy
	// (PlanOptions.PolicyCleared).
	stopped map[string]bool
	// running holds, by ID, running ones a hostlet starting up found,
	// whose stop may be in flight (the engine carries on a stop whose
	// caller was killed): each gets its policy back once such a stop
	// would have ended; one that stops before is one hostlet stopped.
	running map[string]pendingRestore
}

// pendingRestore is when a running container's policy goes back, and
// to what.
type pendingRestore struct {
	policy string
	at     time.Time
}

// createdPolicy is the restart policy app container c was created with,
// its pod's (Always, OnFailure, Never) as its spec label records it;
// false when the label does not say.
func createdPolicy(c hruntime.Container) (string, bool) {
	sum, ok := podspec.ParseSummary(c.Labels[LabelSpec])
	if !ok || sum.RestartPolicy == "" {
		return "", false
	}
	return sum.RestartPolicy, true
}

// markAdoptedPolicy deals with adopted app container c (inspected at
// now: d) whose restart policy is none while the one it was created with
// (createdPolicy) is another: a hostlet before this one cleared it and
// was killed or stopped before it removed or started it again. A stopped
// one is marked for the plan. A running one of policy always gets it
// back now (whatever its exit, should a stop still end it, the plan
// starts it again when wanted); one of policy on-failure at its stop
// timeout's end (policyMarks.running). A pod of restartPolicy Never has
// none to tell by.
func (s *Syncer) markAdoptedPolicy(ctx context.Context, c hruntime.Container, d hruntime.Details, now time.Time) {
	created, ok := createdPolicy(c)
	want := podspec.EngineRestartPolicy(created)
	if !ok || want == hruntime.RestartNo || d.RestartPolicy != hruntime.RestartNo {
		return
	}
	m := &s.syncs.marks
	switch {
	case !d.Running:
		m.markStopped(c.ID)
	case want == hruntime.RestartOnFailure:
		if m.running == nil {
			m.running = map[string]pendingRestore{}
		}
		m.running[c.ID] = pendingRestore{policy: want, at: now.Add(max(d.StopTimeout, 0) + stopMargin)}
	default:
		s.restorePolicyOf(ctx, c.ID, c.Pod(), c.Slot(), want)
	}
}

// restorePolicyOf sets container id's restart policy back to policy and
// reports whether the mark can go (not while the engine is away).
func (s *Syncer) restorePolicyOf(ctx context.Context, id, pod, slot, policy string) bool {
	switch err := s.rt.RestoreRestart(ctx, id, policy); {
	case err == nil:
		s.log.Info("a container hostlet left with its restart policy cleared has it back", "pod", pod, "container", slot, "policy", policy)
	case errors.Is(err, hruntime.ErrUnavailable):
		return false
	case !hruntime.IsNotFound(err):
		s.log.Info("the engine did not set a container's restart policy back; it runs with none",
			"pod", pod, "container", slot, "policy", policy, "error", err)
	}
	return true
}

func (m *policyMarks) markStopped(id string) {
	if m.stopped == nil {
		m.stopped = map[string]bool{}
	}
	m.stopped[id] = true
}

// tendPolicyMarks brings the marks up to actual, listed at now: a mark
// of a container no longer listed goes; a stopped mark, once its
// container runs, with its policy set back; a running one whose
// container stopped becomes a stopped one; a running one whose time has
// come has its policy set back. Nothing is done, nor allocated, without
// marks.
func (s *Syncer) tendPolicyMarks(ctx context.Context, actual []hruntime.Container, now time.Time) {
	m := &s.syncs.marks
	for id := range m.stopped {
		c := listedByID(actual, id)
		switch {
		case c == nil:
			delete(m.stopped, id)
		case c.Running():
			// Not started by a pass (that drops the mark): a stop or a
			// restore that failed left it running, maybe without a policy.
			created, ok := createdPolicy(*c)
			if want := podspec.EngineRestartPolicy(created); !ok || want == hruntime.RestartNo || s.restorePolicyOf(ctx, id, c.Pod(), c.Slot(), want) {
				delete(m.stopped, id)
			}
		}
	}
	for id, r := range m.running {
		c := listedByID(actual, id)
		switch {
		case c == nil:
			delete(m.running, id)
		case !c.Running():
			delete(m.running, id)
			m.markStopped(id)
		case !now.Before(r.at) && s.restorePolicyOf(ctx, id, c.Pod(), c.Slot(), r.policy):
			delete(m.running, id)
		}
	}
}

// listedByID is the container of actual with ID id, nil when there is
// none. The marks are few: a scan each allocates nothing.
func listedByID(actual []hruntime.Container, id string) *hruntime.Container {
	for i := range actual {
		if actual[i].ID == id {
			return &actual[i]
		}
	}
	return nil
}

// afterApply marks the containers the apply left with their policy
// cleared (cleared), then drops the marks of those it started again or
// removed: from then on, a stop is their own. A replaced one keeps its
// mark (the removal after its successor's start may fail).
func (m *policyMarks) afterApply(results []Result, cleared []string) {
	for _, id := range cleared {
		m.markStopped(id)
	}
	if len(m.stopped)+len(m.running) == 0 {
		return
	}
	for _, r := range results {
		for _, ch := range r.Applied {
			if ch.Current != nil && ch.Action != ActionRecreate {
				delete(m.stopped, ch.Current.ID)
				delete(m.running, ch.Current.ID)
			}
		}
	}
}

// clearedIDs collects, from an apply's workers, the IDs of the
// containers whose restart policy it cleared (ApplyOptions.PolicyCleared).
type clearedIDs struct {
	mu  gosync.Mutex
	ids []string
}

// NotePolicyCleared implements PolicyClearedNoter.
func (c *clearedIDs) NotePolicyCleared(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, id)
}

// take returns the IDs collected and forgets them.
func (c *clearedIDs) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.ids
	c.ids = nil
	return ids
}
