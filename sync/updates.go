package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/rollouts"
)

// Reasons of a Running pod whose change waits.
const (
	// ReasonHeld: the pod is held; what its manifest changes waits.
	ReasonHeld = "Held"
	// ReasonWindow: the change disrupts the running pod and waits for
	// the next maintenance window.
	ReasonWindow = "WaitingForMaintenanceWindow"
)

// updateView is what the rollout bookkeeping decided before a sync plans:
// the desired pods as their sources declare them, and which pods are
// restored to their last good version or held (rollouts.View).
type updateView struct {
	declared []Pod
	hashes   map[string]string
	rollouts.View
	// runs are what the inspects before the rollout step read of the
	// pods it may complete (confirmReadyRuns), by pod.
	runs map[string]readyRun
}

// readyRun is what the inspects of a pod's running app containers read
// just before its rollout may complete: the latest start among them, and
// whether any inspect failed or found one not running as listed.
type readyRun struct {
	started time.Time
	broken  string
	// crashLoop names a container the engine restarted crashLoopCount
	// times or more since this version made it ("" when none).
	crashLoop string
}

// effectiveLocked returns the pods to plan: the desired ones, each pod
// whose desired version is held back replaced by its last version that
// was ready (rollouts.Store.Effective). The caller holds mu.
func (s *Syncer) effectiveLocked(pods []Pod) ([]Pod, updateView) {
	out, rv := s.rollouts.Effective(pods, s.podHash, s.opts.HostPaths)
	return out, updateView{declared: pods, hashes: s.desired.hashes, View: rv}
}

// podHash is p's PodHash, computed once per desired set.
func (s *Syncer) podHash(p Pod) string {
	if h, ok := s.desired.hashes[p.Manifest.ID]; ok {
		return h
	}
	return manifest.PodHash(p.Manifest)
}

// podHashes hashes every pod of a desired set.
func podHashes(pods []Pod) map[string]string {
	out := make(map[string]string, len(pods))
	for _, p := range pods {
		out[p.Manifest.ID] = manifest.PodHash(p.Manifest)
	}
	return out
}

// windowWaits returns, when the maintenance window is closed (and no
// force is on), every pod whose plan would disrupt it (recreate, remove
// or restart a running container), with why it waits. Restores of a
// rolled back pod never wait: they repair.
func (s *Syncer) windowWaits(plan Plan, v updateView) map[string]string {
	if s.opts.Window == nil {
		return nil
	}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	forced := now.Before(s.loop.forceUntil)
	s.mu.Unlock()
	open, next, _ := s.opts.Window(now)
	if open || forced {
		return nil
	}
	waits := map[string]string{}
	for _, pp := range plan.Pods {
		if v.Restoring[pp.ID] || !disrupts(pp) {
			continue
		}
		waits[pp.ID] = "maintenance window closed; waits for the next one"
		if !next.IsZero() {
			waits[pp.ID] += " (opens " + next.UTC().Format(time.RFC3339) + ")"
		}
	}
	return waits
}

// disrupts reports whether the plan stops a running container of the pod
// (not one that only moves into its network again: Change.repair).
func disrupts(pp PodPlan) bool {
	for _, ch := range pp.Changes {
		if ch.Current != nil && ch.Current.Running() && ch.Action != ActionNone && ch.Action != ActionCreate && !ch.repair {
			return true
		}
	}
	return false
}

// Force makes the syncs of the next forceFor (at least a minute, and two
// sync intervals) apply every change now, maintenance windows or not
// (POST /sync?force=1, hostlet sync --force): long enough for the sources
// that the same request fetches to deliver. Holds still hold.
func (s *Syncer) Force() {
	d := max(time.Minute, 2*s.opts.Interval)
	s.mu.Lock()
	s.loop.forceUntil = s.opts.Clock.Now().Add(d)
	s.mu.Unlock()
	s.log.Info("sync forced: changes apply now, maintenance windows or not", "for", d)
	s.Trigger()
}

// Window is the maintenance window's state, as the status shows it.
type Window struct {
	Open bool `json:"open"`
	// Next is when the next window opens (while one is open: the one
	// after it); Closes when the open one closes.
	Next   time.Time `json:"next,omitzero"`
	Closes time.Time `json:"closes,omitzero"`
	// ForcedUntil is the end of a force (POST /sync?force=1) now on.
	ForcedUntil time.Time `json:"forcedUntil,omitzero"`
}

// windowState is the window for the status, nil without windows.
func (s *Syncer) windowStateLocked() *Window {
	if s.opts.Window == nil {
		return nil
	}
	now := s.opts.Clock.Now()
	open, next, closes := s.opts.Window(now)
	w := &Window{Open: open, Next: next, Closes: closes}
	if now.Before(s.loop.forceUntil) {
		w.ForcedUntil = s.loop.forceUntil
	}
	return w
}

// observeLocked is what the sync saw of desired pod p (hash its PodHash,
// good the manifest of its last ready version, cs its containers), for
// the rollout state machine. The caller holds mu.
func (s *Syncer) observeLocked(p Pod, hash string, good *manifest.Manifest, cs []hruntime.Container, ps *podState, touched bool, run *readyRun, now time.Time) rollouts.Observation {
	m := p.Manifest
	o := rollouts.Observation{Now: now, Pod: p, Hash: hash, Revision: p.Revision}
	o.MinReady, o.Deadline, o.Policy = rollouts.Settings(m)
	slots := map[string]hruntime.Container{}
	for _, c := range cs {
		if prev, dup := slots[c.Slot()]; c.Slot() != hruntime.InfraName && (!dup || c.Created.After(prev.Created)) {
			slots[c.Slot()] = c
		}
	}
	old := map[string]string{}
	if good != nil {
		for i, gc := range good.Containers {
			old[gc.Name] = manifest.ContainerHash(*good, i)
		}
	}
	ready, created := true, true
	var notReady []string
	for i, mc := range m.Containers {
		c, ok := slots[mc.Name]
		want := manifest.ContainerHash(m, i)
		switch {
		case !ok:
			// Taken down (or never made: a new pod): the old version is
			// not intact. A container the old version did not have is
			// only not made yet (its image may be pulled).
			if good == nil || old[mc.Name] != "" {
				o.Applied = true
			}
			created, ready = false, false
			notReady = append(notReady, "container "+mc.Name+" not created")
			continue
		case c.Hash() != want:
			created, ready = false, false
			notReady = append(notReady, "container "+mc.Name+" not created")
			continue
		case old[mc.Name] != want:
			o.Applied = true
		}
		if t := ps.started[mc.Name]; t.After(o.StartedAt) {
			o.StartedAt = t
		}
		if ps.crashLooping(mc.Name, now) {
			o.Failure = fmt.Sprintf("container %s keeps crashing (%s)", mc.Name, ReasonCrashLoop)
		}
		switch {
		case c.State == hruntime.StateRunning:
			if why := s.notReadyLocked(mc, c); why != "" {
				ready = false
				notReady = append(notReady, why)
			}
			if c.Health == hruntime.HealthUnhealthy {
				o.Failure = fmt.Sprintf("container %s is unhealthy (its healthcheck fails)", mc.Name)
			}
		case c.State == hruntime.StateExited && c.ExitCode == 0 && m.RestartPolicy != manifest.RestartAlways:
			// Done, as its restart policy allows.
		case c.State == hruntime.StateExited && m.RestartPolicy == manifest.RestartNever:
			ready = false
			o.Failure = fmt.Sprintf("container %s exited (%d)", mc.Name, c.ExitCode)
		default:
			ready = false
			notReady = append(notReady, fmt.Sprintf("container %s is %s", mc.Name, stateText(c)))
		}
	}
	// Every container of the desired version there (a release, a revert
	// to what runs): applied, whatever the old version was.
	o.Applied = o.Applied || touched || created
	// A failed apply fails the update, unless the engine was away or is
	// just back (an engine restarting refuses starts for a while: Docker
	// 20.10's "failed to update store for object type
	// *libnetwork.endpoint"): that is no fault of the new version, and
	// the apply is tried again.
	if o.Applied && o.Failure == "" && ps.failReason != "" && ps.pulling == "" && ps.failReason != ReasonUnavailable && !s.pods.outage.covers(now) {
		o.Failure = ps.failMessage
	}
	ready, notReady = run.merge(&o, ready, notReady)
	o.Ready = ready && created
	o.NotReady = strings.Join(notReady, "; ")
	return o
}

// merge adds what the inspects read (run, nil for none) to what the list
// and the start events said: the inspects are fresher.
func (run *readyRun) merge(o *rollouts.Observation, ready bool, notReady []string) (bool, []string) {
	if run == nil {
		return ready, notReady
	}
	if run.started.After(o.StartedAt) {
		o.StartedAt = run.started
	}
	if run.broken != "" {
		ready, notReady = false, append(notReady, run.broken)
	}
	if run.crashLoop != "" && o.Failure == "" {
		ready = false
		o.Failure = fmt.Sprintf("container %s keeps crashing (%s)", run.crashLoop, ReasonCrashLoop)
	}
	return ready, notReady
}

// notReadyLocked says why running container c (of mc) is not ready, or "".
func (s *Syncer) notReadyLocked(mc manifest.Container, c hruntime.Container) string {
	switch {
	case c.Health == hruntime.HealthStarting:
		return "container " + mc.Name + ": healthcheck starting"
	case c.Health == hruntime.HealthUnhealthy:
		return "container " + mc.Name + ": unhealthy"
	case mc.StartupProbe != nil && !s.work.prober.started(c.ID):
		return "container " + mc.Name + ": startup probe not passed yet"
	case mc.ReadinessProbe != nil && !s.work.prober.ready(c.ID):
		return "container " + mc.Name + ": readiness probe not passing"
	case mc.LivenessProbe != nil && !s.work.prober.healthy(c.ID):
		return "container " + mc.Name + ": liveness probe failing"
	}
	return ""
}

// advanceRollouts moves every desired pod's rollout on by what this sync
// saw (actual), saves the rollouts when they changed, and tells what
// happened. touched names the pods this sync applied something to (nil
// for none). The step runs under mu (the pods' state it observes) and the
// store's lock; in a no-op sync (rollouts.Store.Settled) nothing is
// observed.
func (s *Syncer) advanceRollouts(v updateView, ready bool, actual []hruntime.Container, touched map[string]bool, now time.Time) {
	var notes []rollouts.Note
	s.mu.Lock()
	if !s.rollouts.Settled(v.declared, v.hashes, ready) {
		notes = s.stepRolloutsLocked(v, ready, actual, touched, now)
	}
	s.mu.Unlock()
	s.rollouts.Save()
	s.tell(notes, now)
}

// stepRolloutsLocked is advanceRollouts' step, and what it does to the
// pods' state; the caller holds mu.
func (s *Syncer) stepRolloutsLocked(v updateView, ready bool, actual []hruntime.Container, touched map[string]bool, now time.Time) []rollouts.Note {
	// byPod is made when a pod needs more than a look at its rollout.
	var byPod map[string][]hruntime.Container
	containersOf := func(id string) []hruntime.Container {
		if byPod == nil {
			byPod = map[string][]hruntime.Container{}
			for _, c := range actual {
				byPod[c.Pod()] = append(byPod[c.Pod()], c)
			}
		}
		return byPod[id]
	}
	notes := s.rollouts.Advance(rollouts.Seen{Now: now, Declared: v.declared, Hashes: v.hashes, Ready: ready,
		Present: func(id string) bool { return len(containersOf(id)) > 0 },
		Observe: func(p Pod, hash string, good *manifest.Manifest) rollouts.Observation {
			id := p.Manifest.ID
			var run *readyRun
			if r, ok := v.runs[id]; ok {
				run = &r
			}
			return s.observeLocked(p, hash, good, containersOf(id), s.podStateLocked(id), touched[id], run, now)
		}})
	for _, n := range notes {
		switch n.Outcome {
		case rollouts.OutcomeStarted:
			ps := s.podStateLocked(n.Pod)
			clear(ps.crashes)
			ps.rolloutStart = cmp.Or(ps.lastApply, now)
		case rollouts.OutcomeRolledBack:
			// The restore starts at once: no backoff, no stale failure.
			ps := s.podStateLocked(n.Pod)
			clear(ps.crashes)
			ps.failReason, ps.failMessage = "", ""
			delete(s.pods.backoff, n.Pod)
		}
	}
	return notes
}

// tell records events and logs for the rollouts' outcomes.
func (s *Syncer) tell(notes []rollouts.Note, now time.Time) {
	for _, n := range notes {
		switch n.Outcome {
		case rollouts.OutcomeComplete:
			s.log.Info("update complete", "pod", n.Pod, "revision", n.Revision)
		case rollouts.OutcomeRolledBack:
			msg := fmt.Sprintf("revision %s held back; restoring the last ready version (%s)", shortRevision(n.Revision), manifest.ShortHash(n.PreviousHash, 12))
			s.events.Record(eventlog.Event{Time: now, Type: eventlog.Rollback, Pod: n.Pod, Reason: n.Reason, Message: msg})
			s.log.Warn("update failed; rolling back", "pod", n.Pod, "revision", n.Revision, "reason", n.Reason)
			s.Trigger()
		case rollouts.OutcomeFailed, rollouts.OutcomeHeld:
			s.events.Record(eventlog.Event{Time: now, Type: eventlog.Failed, Pod: n.Pod, Reason: "UpdateFailed", Message: n.Reason})
			s.log.Warn("update failed", "pod", n.Pod, "revision", n.Revision, "reason", n.Reason)
		}
	}
}

// shortRevision is a revision cut to 12 characters, a "sha256:" or
// similar prefix left out (a git SHA has none).
func shortRevision(rev string) string {
	if _, after, ok := strings.Cut(rev, ":"); ok {
		rev = after
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev
}

// confirmReadyRuns reads again, by inspect, the running app containers of
// the pods whose rollout this sync may complete (seen ready for
// minReadySeconds at now, the time the rollout step is given too). A
// restart by the engine in between is otherwise known only from its start
// event, which lags behind under load: a version crashing at once would
// pass for ready between two syncs that both saw it running. The latest
// start an inspect reads counts as the pod's start in the step (it resets
// the pod's ready time); a container the engine is restarting (it lists
// it running) or found exited is so in actual; a failed inspect makes the
// pod not ready this sync (its ready time starts again); a container
// the engine restarted crashLoopCount times since it was made is a crash
// loop. Only pods about to complete cost calls, once per rollout.
func (s *Syncer) confirmReadyRuns(ctx context.Context, actual []hruntime.Container, now time.Time) map[string]readyRun {
	s.mu.Lock()
	due := s.rollouts.CompletionsDue(s.desired.set.Pods, now)
	// When the apply that began each due rollout began: containers
	// created before it (siblings the rollout left as they were) count
	// restarts that are not this version's.
	starts := make(map[string]time.Time, len(due))
	for id := range due {
		starts[id] = s.podStateLocked(id).rolloutStart
	}
	s.mu.Unlock()
	var runs map[string]readyRun
	for i := range actual {
		c := &actual[i]
		if !due[c.Pod()] || c.Slot() == hruntime.InfraName || c.State != hruntime.StateRunning {
			continue
		}
		if runs == nil {
			runs = map[string]readyRun{}
		}
		run := runs[c.Pod()]
		d, err := s.rt.Inspect(ctx, c.ID)
		switch {
		case err != nil:
			s.log.Warn("inspect container before its rollout completes", "pod", c.Pod(), "container", c.Slot(), "error", err)
			run.broken = "container " + c.Slot() + " not inspected"
		case d.RestartCount >= crashLoopCount && !c.Created.Before(starts[c.Pod()].Truncate(time.Second)):
			// Restarted by the engine that often since this rollout
			// made it: a crash loop, whether or not its die events came
			// (Podman restarts at once, says "restarting" never, and
			// sends no event for most of its restarts). A container the
			// rollout did not make (a sibling it left as it was) counts
			// restarts from before: not this version's.
			run.crashLoop = c.Slot()
		case !d.Running:
			// It exited since the list: the step takes its exit.
			c.State, c.ExitCode = hruntime.StateExited, d.ExitCode
		case d.Restarting:
			c.State = hruntime.StateRestarting
		case d.StartedAt.After(run.started):
			run.started = d.StartedAt
		}
		runs[c.Pod()] = run
	}
	return runs
}

// dueRollout is when a rollout next needs a sync without any event (a
// minReadySeconds or a deadline passing); zero for none.
func (s *Syncer) dueRollout() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rollouts.Due(s.desired.set.Pods)
}

// Rollbacks returns how many times each pod was rolled back since start.
func (s *Syncer) Rollbacks() map[string]uint64 { return s.rollouts.Rollbacks() }

// ErrChangeUnderWay is Hold's answer when the hold is taken (and saved)
// but a change of the pod that was under way when it was taken had not
// ended when ctx did: it ends, and nothing more is changed.
var ErrChangeUnderWay = errors.New("held; a change of the pod under way when the hold was taken is still ending (nothing more will be changed)")

// Hold holds pod id (it need not exist yet): from now on hostlet neither
// recreates, removes nor starts it, until Release. The hold is saved
// under stateDir before Hold returns; a hold that cannot be saved is not
// taken. by and reason are shown in the status; control characters are
// replaced and both are cut to their bounds.
//
// A change of the pod that was being applied when the hold was taken is
// waited for (until ctx ends): once Hold returns, nothing of the pod is
// being changed, and nothing will be until Release.
func (s *Syncer) Hold(ctx context.Context, id, by, reason string) (Hold, error) {
	h, err := s.rollouts.Hold(id, by, reason, s.opts.Clock.Now())
	if err != nil {
		return Hold{}, err
	}
	s.events.Record(eventlog.Event{Time: h.Since, Type: eventlog.Hold, Pod: id, Reason: "held by " + h.By, Message: h.Reason})
	s.log.Info("pod held", "pod", id, "by", h.By, "reason", h.Reason)
	if busy := s.rollouts.Applying(id); busy != nil {
		s.log.Info("a change of the held pod is under way; waiting for it to end", "pod", id)
		select {
		case <-busy:
		case <-ctx.Done():
			return h, ErrChangeUnderWay
		}
	}
	s.Trigger()
	return h, nil
}

// beginApply is asked right before a pod is applied: a pod held since
// the plan was made is left as it is; any other is marked as being
// applied until endApply (rollouts.Store.Begin).
// beginApply notes when the apply of pod id began (a rollout it starts
// counts restarts of the containers made since) and tells the rollouts.
func (s *Syncer) beginApply(id string) bool {
	s.mu.Lock()
	s.podStateLocked(id).lastApply = s.opts.Clock.Now()
	s.mu.Unlock()
	return s.rollouts.Begin(id)
}

func (s *Syncer) endApply(id string) { s.rollouts.End(id) }

// Release ends the hold on pod id (ErrNotHeld when there is none); the
// next sync applies what waited.
func (s *Syncer) Release(id string) error {
	if err := s.rollouts.Release(id); err != nil {
		return err
	}
	s.events.Record(eventlog.Event{Time: s.opts.Clock.Now(), Type: eventlog.Release, Pod: id, Reason: "hold released"})
	s.log.Info("pod released", "pod", id)
	s.Trigger()
	return nil
}
