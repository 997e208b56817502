package sync

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/events"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/validate"
)

// Reasons of a Running pod whose change waits.
const (
	// ReasonHeld: the pod is held; what its manifest changes waits.
	ReasonHeld = "Held"
	// ReasonWindow: the change disrupts the running pod and waits for
	// the next maintenance window.
	ReasonWindow = "WaitingForMaintenanceWindow"
)

// Bounds on holds: an operator's words are shown, never trusted.
const (
	// MaxHolds bounds the pods held at once.
	MaxHolds = 1000
	// MaxHoldText bounds a hold's reason; who holds is cut to 256 bytes.
	MaxHoldText = 1024
)

// updateView is what the rollout bookkeeping decided before a sync plans:
// the desired pods as their sources declare them, and which pods are
// restored to their last good version or held.
type updateView struct {
	declared  []Pod
	hashes    map[string]string
	restoring map[string]bool
	held      map[string]bool
}

// effectiveLocked returns the pods to plan: the desired ones, each pod
// whose desired version is held back replaced by its last version that
// was ready. The caller holds mu.
func (s *Syncer) effectiveLocked(pods []Pod) ([]Pod, updateView) {
	v := updateView{declared: pods, hashes: s.podHashes, restoring: map[string]bool{}, held: map[string]bool{}}
	for id, r := range s.rollouts.Pods {
		if r.Hold != nil {
			v.held[id] = true
		}
	}
	var out []Pod
	for i, p := range pods {
		id := p.Manifest.ID
		r := s.rollouts.Pods[id]
		if r == nil || r.Bad == nil || r.Bad.Hash != s.podHash(p) {
			continue
		}
		if r.Good == nil {
			r.checkedGood = ""
			// Held back, but what to restore is not known (the sealed
			// rollouts were lost): what runs is left as it is, as a
			// held pod is, rather than the bad version applied again.
			v.held[id] = true
			r.unrestorable = "the last ready version is not known (rollouts.json was lost), so what runs is left as it is"
			continue
		}
		if out == nil {
			out = append([]Pod(nil), pods...)
		}
		good := r.Good.pod()
		// Checked once per kept version (the host's policy is fixed while
		// hostlet runs), not at every sync of a rolled back pod.
		if r.checkedGood != r.Good.Hash {
			r.checkedGood, r.unrestorable = r.Good.Hash, ""
			if err := validate.Manifest(manifest.Sourced{Manifest: good.Manifest, Origin: manifest.Origin{Source: good.Source}}, s.opts.HostPaths); err != nil {
				// The host's policy changed since: what was ready is not
				// allowed any more; the new version stays, and the status
				// says why.
				s.log.Warn("the last ready version of a rolled back pod is not valid on this host any more; not restored", "pod", id, "error", err)
				r.unrestorable = "the last ready version is not allowed on this host any more, so the new version stays: " + textcap.Truncate(err.Error(), 512)
			}
		}
		if r.unrestorable != "" {
			continue
		}
		out[i] = good
		v.restoring[id] = true
	}
	if out == nil {
		return pods, v
	}
	return out, v
}

// podHash is p's PodHash, computed once per desired set.
func (s *Syncer) podHash(p Pod) string {
	if h, ok := s.podHashes[p.Manifest.ID]; ok {
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
	now := s.clock.Now()
	s.mu.Lock()
	forced := now.Before(s.forceUntil)
	s.mu.Unlock()
	open, next, _ := s.opts.Window(now)
	if open || forced {
		return nil
	}
	waits := map[string]string{}
	for _, pp := range plan.Pods {
		if v.restoring[pp.ID] || !disrupts(pp) {
			continue
		}
		waits[pp.ID] = "maintenance window closed; waits for the next one"
		if !next.IsZero() {
			waits[pp.ID] += " (opens " + next.UTC().Format(time.RFC3339) + ")"
		}
	}
	return waits
}

// disrupts reports whether the plan stops a running container of the pod.
func disrupts(pp PodPlan) bool {
	for _, ch := range pp.Changes {
		if ch.Current != nil && ch.Current.Running() && ch.Action != ActionNone && ch.Action != ActionCreate {
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
	s.forceUntil = s.clock.Now().Add(d)
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
	now := s.clock.Now()
	open, next, closes := s.opts.Window(now)
	w := &Window{Open: open, Next: next, Closes: closes}
	if now.Before(s.forceUntil) {
		w.ForcedUntil = s.forceUntil
	}
	return w
}

// observe is what the sync saw of desired pod p (hash its PodHash, cs
// its containers), for the rollout state machine.
func (s *Syncer) observeLocked(p Pod, hash string, r *podRollout, cs []hruntime.Container, ps *podState, touched bool, now time.Time) observation {
	m := p.Manifest
	o := observation{now: now, pod: p, hash: hash, revision: p.Revision}
	o.minReady, o.deadline, o.policy = rolloutSettings(m)
	slots := map[string]hruntime.Container{}
	for _, c := range cs {
		if prev, dup := slots[c.Slot()]; c.Slot() != hruntime.InfraName && (!dup || c.Created.After(prev.Created)) {
			slots[c.Slot()] = c
		}
	}
	old := map[string]string{}
	if r.Good != nil {
		for i, gc := range r.Good.Manifest.Containers {
			old[gc.Name] = manifest.ContainerHash(r.Good.Manifest, i)
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
			if r.Good == nil || old[mc.Name] != "" {
				o.applied = true
			}
			created, ready = false, false
			notReady = append(notReady, "container "+mc.Name+" not created")
			continue
		case c.Hash() != want:
			created, ready = false, false
			notReady = append(notReady, "container "+mc.Name+" not created")
			continue
		case old[mc.Name] != want:
			o.applied = true
		}
		if t := ps.started[mc.Name]; t.After(o.startedAt) {
			o.startedAt = t
		}
		if ps.crashLooping(mc.Name, now) {
			o.failure = fmt.Sprintf("container %s keeps crashing (%s)", mc.Name, ReasonCrashLoop)
		}
		switch {
		case c.State == hruntime.StateRunning:
			if why := s.notReadyLocked(mc, c); why != "" {
				ready = false
				notReady = append(notReady, why)
			}
			if c.Health == hruntime.HealthUnhealthy {
				o.failure = fmt.Sprintf("container %s is unhealthy (its healthcheck fails)", mc.Name)
			}
		case c.State == hruntime.StateExited && c.ExitCode == 0 && m.RestartPolicy != manifest.RestartAlways:
			// Done, as its restart policy allows.
		case c.State == hruntime.StateExited && m.RestartPolicy == manifest.RestartNever:
			ready = false
			o.failure = fmt.Sprintf("container %s exited (%d)", mc.Name, c.ExitCode)
		default:
			ready = false
			notReady = append(notReady, fmt.Sprintf("container %s is %s", mc.Name, stateText(c)))
		}
	}
	// Every container of the desired version there (a release, a revert
	// to what runs): applied, whatever the old version was.
	o.applied = o.applied || touched || created
	if o.applied && o.failure == "" && ps.failReason != "" && ps.pulling == "" && ps.failReason != ReasonUnavailable {
		o.failure = ps.failMessage
	}
	o.ready = ready && created
	o.notReady = strings.Join(notReady, "; ")
	return o
}

// notReadyLocked says why running container c (of mc) is not ready, or "".
func (s *Syncer) notReadyLocked(mc manifest.Container, c hruntime.Container) string {
	switch {
	case c.Health == hruntime.HealthStarting:
		return "container " + mc.Name + ": healthcheck starting"
	case c.Health == hruntime.HealthUnhealthy:
		return "container " + mc.Name + ": unhealthy"
	case mc.ReadinessProbe != nil && !s.prober.ready(c.ID):
		return "container " + mc.Name + ": readiness probe not passing"
	case mc.LivenessProbe != nil && !s.prober.healthy(c.ID):
		return "container " + mc.Name + ": liveness probe failing"
	}
	return ""
}

// rolloutNote is an outcome to tell (events, log) once mu is released.
type rolloutNote struct {
	pod, revision, reason, prev string
	outcome                     outcome
}

// advanceRollouts moves every desired pod's rollout on by what this sync
// saw (actual), saves the rollouts when they changed, and tells what
// happened. touched names the pods this sync applied something to.
func (s *Syncer) advanceRollouts(v updateView, ready bool, actual []hruntime.Container, touched map[string]bool) {
	// byPod is made when a pod needs more than a look at its rollout
	// (not in a no-op sync of pods that are Complete).
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
	now := s.clock.Now()
	var notes []rolloutNote
	s.mu.Lock()
	for _, p := range v.declared {
		id := p.Manifest.ID
		hash := v.hashes[id]
		if hash == "" {
			hash = manifest.PodHash(p.Manifest)
		}
		r := s.rollouts.get(id)
		if r.Hold == nil && r.Bad == nil && r.Rollout.State == RolloutComplete && r.Rollout.Hash == hash {
			continue // the common case: nothing to look at
		}
		before, badBefore := r.Rollout, r.Bad
		ps := s.podStateLocked(id)
		out := r.step(s.observeLocked(p, hash, r, containersOf(id), ps, touched[id], now))
		if out != outcomeNone || r.Rollout != before {
			s.rollouts.dirty = true
		}
		if out == outcomeHeld || r.Bad != badBefore {
			s.rollouts.holdsChanged()
		}
		switch out {
		case outcomeStarted:
			clear(ps.crashes)
		case outcomeRolledBack:
			// The restore starts at once: no backoff, no stale failure.
			clear(ps.crashes)
			ps.failReason, ps.failMessage = "", ""
			delete(s.backoff, id)
			s.rollbacks[id]++
		}
		if out > outcomeStarted {
			notes = append(notes, rolloutNote{pod: id, revision: p.Revision, reason: r.Rollout.Reason, prev: r.Rollout.PreviousHash, outcome: out})
		}
	}
	if ready {
		// Forget the pods no source declares any more (and not held):
		// removed, their last good version goes too.
		for id, r := range s.rollouts.Pods {
			if _, declared := v.hashes[id]; !declared && r.Hold == nil && len(containersOf(id)) == 0 {
				delete(s.rollouts.Pods, id)
				s.rollouts.dirty = true
				if r.Bad != nil {
					s.rollouts.holdsChanged()
				}
			}
		}
	}
	snap := s.rollouts.snapshot()
	s.mu.Unlock()
	if err := s.rollouts.write(snap); err != nil {
		s.log.Warn("save holds", "error", err)
	}
	s.tell(notes, now)
}

// tell records events and logs for the rollouts' outcomes.
func (s *Syncer) tell(notes []rolloutNote, now time.Time) {
	for _, n := range notes {
		switch n.outcome {
		case outcomeComplete:
			s.log.Info("update complete", "pod", n.pod, "revision", n.revision)
		case outcomeRolledBack:
			msg := fmt.Sprintf("revision %s held back; restoring the last ready version (%s)", shortRevision(n.revision), manifest.ShortHash(n.prev, 12))
			s.events.Record(events.Event{Time: now, Type: events.Rollback, Pod: n.pod, Reason: n.reason, Message: msg})
			s.log.Warn("update failed; rolling back", "pod", n.pod, "revision", n.revision, "reason", n.reason)
			s.Trigger()
		case outcomeFailed, outcomeHeld:
			s.events.Record(events.Event{Time: now, Type: events.Failed, Pod: n.pod, Reason: "UpdateFailed", Message: n.reason})
			s.log.Warn("update failed", "pod", n.pod, "revision", n.revision, "reason", n.reason)
		}
	}
}

// rolloutSettings are m's minReadySeconds, progressDeadlineSeconds and
// rollback policy, their defaults where m leaves them out.
func rolloutSettings(m manifest.Manifest) (minReady, deadline time.Duration, policy string) {
	minReady, deadline, policy = manifest.Seconds(m.MinReadySeconds), manifest.Seconds(m.ProgressDeadlineSeconds), m.Rollback
	if m.MinReadySeconds == 0 {
		minReady = manifest.DefaultMinReadySeconds * time.Second
	}
	if m.ProgressDeadlineSeconds == 0 {
		deadline = manifest.DefaultProgressDeadlineSeconds * time.Second
	}
	if policy == "" {
		policy = manifest.RollbackAuto
	}
	return minReady, deadline, policy
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
// minReadySeconds). A restart by the engine in between is otherwise known
// only from its start event, which lags behind under load: a version
// crashing at once would pass for ready between two syncs that both saw it
// running. The inspect's start time resets the pod's ready time, and a
// container the engine is about to restart (the list still shows it
// running) is marked restarting in actual. Only pods about to complete
// cost calls, once per rollout.
func (s *Syncer) confirmReadyRuns(ctx context.Context, actual []hruntime.Container) {
	due := s.completionsDue()
	for i := range actual {
		c := &actual[i]
		if !due[c.Pod()] || c.Slot() == hruntime.InfraName || c.State != hruntime.StateRunning {
			continue
		}
		d, err := s.rt.Inspect(ctx, c.ID)
		if err != nil {
			s.log.Warn("inspect container before its rollout completes", "pod", c.Pod(), "container", c.Slot(), "error", err)
			continue
		}
		switch {
		case !d.Running:
			c.State, c.ExitCode = hruntime.StateExited, d.ExitCode
		case d.FinishedAt.After(d.StartedAt):
			c.State = hruntime.StateRestarting
		}
		s.setStarted(c.Pod(), c.Slot(), d.StartedAt)
	}
}

// completionsDue names the desired pods whose rollout has been ready for
// its minReadySeconds as far as the syncs saw: this sync may complete it.
func (s *Syncer) completionsDue() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var due map[string]bool
	for _, p := range s.desired.Pods {
		r := s.rollouts.Pods[p.Manifest.ID]
		if r == nil || r.Rollout.State != RolloutProgressing || r.Failed || r.readySince.IsZero() {
			continue
		}
		if minReady, _, _ := rolloutSettings(p.Manifest); now.Sub(r.readySince) >= minReady {
			if due == nil {
				due = map[string]bool{}
			}
			due[p.Manifest.ID] = true
		}
	}
	return due
}

// dueRollout is when a rollout next needs a sync without any event (a
// minReadySeconds or a deadline passing); zero for none.
func (s *Syncer) dueRollout() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due time.Time
	for _, p := range s.desired.Pods {
		r := s.rollouts.Pods[p.Manifest.ID]
		if r == nil || r.Rollout.State != RolloutProgressing {
			continue
		}
		minReady, deadline, _ := rolloutSettings(p.Manifest)
		if d := r.due(minReady, deadline); !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	return due
}

// goodPods are the last ready versions of the pods that have one.
func (s *Syncer) goodPods() []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pod
	for _, r := range s.rollouts.Pods {
		if r.Good != nil {
			out = append(out, r.Good.pod())
		}
	}
	return out
}

// Rollbacks returns how many times each pod was rolled back since start.
func (s *Syncer) Rollbacks() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.rollbacks))
	for k, n := range s.rollbacks {
		out[k] = n
	}
	return out
}

// ErrChangeUnderWay is Hold's answer when the hold is taken (and saved)
// but a change of the pod that was under way when it was taken had not
// ended when ctx did: it ends, and nothing more is changed.
var ErrChangeUnderWay = errors.New("held; a change of the pod under way when the hold was taken is still ending (nothing more will be changed)")

// ErrNotHeld is Release's error for a pod that is not held.
var ErrNotHeld = errors.New("pod is not held")

// podIDRE is an RFC 1123 DNS subdomain, as pod IDs are.
var podIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

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
	if len(id) > 253 || !podIDRE.MatchString(id) {
		return Hold{}, fmt.Errorf("hold %q: not a pod ID (an RFC 1123 DNS subdomain)", id)
	}
	h := Hold{By: cleanText(by, 256), Reason: cleanText(reason, MaxHoldText), Since: s.clock.Now().UTC()}
	if h.By == "" {
		h.By = "unknown"
	}
	s.mu.Lock()
	r := s.rollouts.Pods[id]
	if r == nil || r.Hold == nil {
		n := 0
		for _, o := range s.rollouts.Pods {
			if o.Hold != nil {
				n++
			}
		}
		if n >= MaxHolds {
			s.mu.Unlock()
			return Hold{}, fmt.Errorf("hold %s: %d pods are held already, the most this host keeps", id, MaxHolds)
		}
	}
	r = s.rollouts.get(id)
	prev, prevRollout := r.Hold, r.Rollout
	r.Hold = &h
	r.Rollout = Rollout{State: RolloutHeld, Revision: r.Rollout.Revision, Hash: r.Rollout.Hash, PreviousHash: r.Rollout.PreviousHash,
		Since: h.Since, Reason: h.Reason, Hold: r.Hold}
	s.rollouts.dirty = true
	s.rollouts.holdsChanged()
	snap := s.rollouts.snapshot()
	s.mu.Unlock()
	if err := s.rollouts.write(snap); err != nil {
		s.mu.Lock()
		r.Hold, r.Rollout = prev, prevRollout
		s.rollouts.dirty = true
		s.rollouts.holdsChanged()
		s.mu.Unlock()
		return Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	s.events.Record(events.Event{Time: h.Since, Type: events.Hold, Pod: id, Reason: "held by " + h.By, Message: h.Reason})
	s.log.Info("pod held", "pod", id, "by", h.By, "reason", h.Reason)
	s.mu.Lock()
	busy := s.applying[id]
	s.mu.Unlock()
	if busy != nil {
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
// applied until endApply.
func (s *Syncer) beginApply(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rollouts.Pods[id]; r != nil && r.Hold != nil {
		return false
	}
	s.applying[id] = make(chan struct{})
	return true
}

func (s *Syncer) endApply(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.applying[id]; ch != nil {
		close(ch)
		delete(s.applying, id)
	}
}

// Release ends the hold on pod id (ErrNotHeld when there is none); the
// next sync applies what waited.
func (s *Syncer) Release(id string) error {
	s.mu.Lock()
	r := s.rollouts.Pods[id]
	if r == nil || r.Hold == nil {
		s.mu.Unlock()
		return fmt.Errorf("release %q: %w", id, ErrNotHeld)
	}
	prev := r.Hold
	r.Hold = nil
	s.rollouts.dirty = true
	s.rollouts.holdsChanged()
	snap := s.rollouts.snapshot()
	s.mu.Unlock()
	if err := s.rollouts.write(snap); err != nil {
		s.mu.Lock()
		r.Hold = prev
		s.rollouts.dirty = true
		s.rollouts.holdsChanged()
		s.mu.Unlock()
		return fmt.Errorf("release %s: %w", id, err)
	}
	s.events.Record(events.Event{Time: s.clock.Now(), Type: events.Release, Pod: id, Reason: "hold released"})
	s.log.Info("pod released", "pod", id)
	s.Trigger()
	return nil
}

// cleanText replaces control characters and cuts s to n bytes.
func cleanText(s string, n int) string {
	return textcap.Truncate(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s)), n)
}
