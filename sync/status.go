package sync

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/statefile"
	"github.com/hostlet/hostlet/validate"
)

// Pod phases.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseFailed    = "Failed"
	PhaseSucceeded = "Succeeded"
)

// ReasonCrashLoop marks a pod whose container keeps crashing.
const ReasonCrashLoop = "CrashLoopBackOff"

// crashLoopWindow and crashLoopCount: this many crashes within the window
// make a CrashLoopBackOff.
const (
	crashLoopWindow = 5 * time.Minute
	crashLoopCount  = 3
)

// LastAction is the last thing hostlet did to a pod, and why.
type LastAction struct {
	Action    string    `json:"action"`
	Container string    `json:"container,omitempty"`
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"`
}

// PodStatus is one pod in the status document.
type PodStatus struct {
	ID         string            `json:"id"`
	Source     string            `json:"source"`
	Revision   string            `json:"revision"`
	Phase      string            `json:"phase"`
	Reason     string            `json:"reason,omitempty"`
	Message    string            `json:"message,omitempty"`
	LastAction *LastAction       `json:"lastAction,omitempty"`
	Containers []ContainerStatus `json:"containers"`
	// Manifest is the applied manifest with env values replaced by hashes.
	Manifest *manifest.Manifest `json:"manifest,omitempty"`
	// InfraHash is the spec hash of the pod's infra container, "" for a pod
	// without one.
	InfraHash string `json:"infraHash,omitempty"`
	// Rollout is where the pod's update stands.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// ContainerStatus is one container of a pod in the status document.
type ContainerStatus struct {
	Name        string `json:"name"`
	Image       string `json:"image"`
	Hash        string `json:"hash"`
	State       string `json:"state"`
	Restarts    int    `json:"restarts"`
	Healthy     bool   `json:"healthy"`
	ContainerID string `json:"containerID"`
	StartedAt   string `json:"startedAt,omitempty"`
	LastError   string `json:"lastError"`
	// Published are the host ports the engine picked for the container's
	// ports published on a random one (randomHostPort):
	// "127.0.0.1:49153->8080/tcp".
	Published []string `json:"published,omitempty"`
	// health is the Docker healthcheck's state ("" without one).
	health string
}

// Report is what the syncer knows: the last sync, every pod, every
// rejected manifest.
type Report struct {
	LastSync SyncInfo             `json:"lastSync"`
	Pods     []PodStatus          `json:"pods"`
	Rejected []validate.Rejection `json:"rejected"`
	// Window is the maintenance window (nil without sync.windows).
	Window *Window `json:"window,omitempty"`
}

// podState is what the syncer remembers of a pod between syncs.
type podState struct {
	status      PodStatus
	lastAction  *LastAction
	failReason  string
	failMessage string
	crashes     map[string][]time.Time
	started     map[string]time.Time
	// runs is, by slot, what restart counting knows of its container's
	// runs (see slotRuns).
	runs map[string]slotRuns
	// lastApply is when the last apply of the pod began; rolloutStart
	// when the apply that began its current rollout did.
	lastApply, rolloutStart time.Time
	// pulling says which images are being pulled for the pod ("" when
	// none): it waits Pending, reason Pulling.
	pulling string
	// building: the pod waits for an image build (reason Building).
	building bool
	// initializing says which init container runs ("" when none): the
	// pod is Pending, reason PodInitializing, while a container is
	// missing.
	initializing string
	// waiting says which dependencies the pod waits for ("" when none):
	// Pending, reason WaitingForDependency, while it is not as desired.
	waiting string
	// held and window say what of the pod waits on its hold or for a
	// maintenance window ("" when nothing).
	held, window string
}

func (s *Syncer) podStateLocked(id string) *podState {
	ps := s.pods.states[id]
	if ps == nil {
		ps = &podState{crashes: map[string][]time.Time{}, started: map[string]time.Time{}, runs: map[string]slotRuns{}}
		s.pods.states[id] = ps
	}
	return ps
}

// adoptedStart records that adopted container id of slot started at t
// (zero when unknown): its next start is a restart.
func (s *Syncer) adoptedStart(pod, slot, id string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.podStateLocked(pod)
	if !t.IsZero() {
		ps.started[slot] = t
	}
	ps.knownStarted(slot, id)
}

// replacedSlot reports whether the status shows slot with a container
// other than id: id's events are of a container the slot had before.
func (ps *podState) replacedSlot(slot, id string) bool {
	for _, c := range ps.status.Containers {
		if c.Name == slot {
			return c.ContainerID != "" && c.ContainerID != id
		}
	}
	return false
}

// slotRuns is what restart counting knows of a slot's container's runs.
// A restart is counted once per run, by whoever started it: hostlet when
// it starts a container again (its start event then says nothing more,
// see Syncer.markOwnStart), or the container's start event when the
// engine did. A container's exit is not what is counted: one exit can be
// seen both by its die event and by hostlet finding the container exited
// (Podman restarts late, and its events come late), but each run has one
// start.
type slotRuns struct {
	// startedID is the container of the slot known to have started (a
	// start event, or adopted): its next start is a restart.
	startedID string
	// exitID and exitCode are the container and code of the slot's last
	// die event, for the restart's reason; exitTime tells an exit the
	// engine's outage caused (engineStoppedLocked).
	exitID   string
	exitCode int
	// exitTime is when that die event said it exited (zero: unknown).
	exitTime time.Time
}

// knownStarted records that container id of slot has started.
func (ps *podState) knownStarted(slot, id string) {
	if r := ps.runs[slot]; r.startedID != id {
		r.startedID = id
		ps.runs[slot] = r
	}
}

// engineStart records a start event of container id in slot that hostlet
// did not make, and reports whether it is a restart: of a container that
// started before and that the slot still has.
func (ps *podState) engineStart(slot, id string) bool {
	r := ps.runs[slot]
	restart := r.startedID == id && !ps.replacedSlot(slot, id)
	r.startedID = id
	ps.runs[slot] = r
	return restart
}

// exitReason is the reason of a restart of container id in slot: its last
// exit code, when its die event came. The code is used once: the next
// run's die event may not come (Podman sends few).
func (ps *podState) exitReason(slot, id string) string {
	r := ps.runs[slot]
	if r.exitID != id {
		return "exited"
	}
	r.exitID = ""
	ps.runs[slot] = r
	return fmt.Sprintf("exited (%d)", r.exitCode)
}

// crash records a crash of slot at t, or at now when the event carried no
// time.
func (ps *podState) crash(slot string, t, now time.Time) {
	if t.IsZero() {
		t = now
	}
	ps.crashes[slot] = append(ps.crashes[slot], t)
	if n := len(ps.crashes[slot]); n > 10 {
		ps.crashes[slot] = ps.crashes[slot][n-10:]
	}
}

func (ps *podState) crashLooping(slot string, now time.Time) bool {
	n := 0
	for _, t := range ps.crashes[slot] {
		if now.Sub(t) <= crashLoopWindow {
			n++
		}
	}
	return n >= crashLoopCount
}

// Report returns the current status of every pod.
func (s *Syncer) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{LastSync: s.loop.lastSync, Pods: []PodStatus{}, Rejected: append([]validate.Rejection{}, s.desired.set.Rejected...), Window: s.windowStateLocked()}
	ids := make([]string, 0, len(s.pods.states))
	for id := range s.pods.states {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ps := s.pods.states[id]
		if ps.status.ID == "" {
			continue
		}
		st := ps.status
		st.Containers = append([]ContainerStatus(nil), st.Containers...)
		st.Rollout = s.rollouts.Shown(id)
		for i := range st.Containers {
			c := &st.Containers[i]
			c.Restarts = s.pods.restarts.count(id, c.Name)
			c.Healthy = c.State == hruntime.StateRunning && s.work.prober.healthy(c.ContainerID) &&
				c.health != hruntime.HealthUnhealthy && c.health != hruntime.HealthStarting
		}
		r.Pods = append(r.Pods, st)
	}
	return r
}

// updateStatus recomputes every pod's status from the desired set and one
// list of the engine's containers.
func (s *Syncer) updateStatus(desired Desired, actual []hruntime.Container) {
	byPod := map[string][]hruntime.Container{}
	for _, c := range actual {
		byPod[c.Pod()] = append(byPod[c.Pod()], c)
	}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := map[string]bool{}
	for _, p := range desired.Pods {
		id := p.Manifest.ID
		keep[id] = true
		ps := s.podStateLocked(id)
		was := ps.status.Phase
		ps.status = s.podStatus(p, ps, byPod[id], now)
		if was == PhaseFailed && (ps.status.Phase == PhaseRunning || ps.status.Phase == PhaseSucceeded) {
			s.events.Record(eventlog.Event{Time: now, Type: eventlog.Recovered, Pod: id, Reason: "the pod is " + ps.status.Phase + " again"})
		}
	}
	for id, ps := range s.pods.states {
		if keep[id] {
			continue
		}
		if cs := byPod[id]; len(cs) > 0 {
			// Not desired but still there (prune off, or sources not ready).
			src := cs[0].Labels[hruntime.LabelSource]
			ps.status = PodStatus{ID: id, Source: src, Revision: cs[0].Labels[hruntime.LabelRevision], Phase: PhaseRunning,
				Reason: "NotDesired", Message: "no source declares this pod; it is left running", LastAction: ps.lastAction}
			for _, c := range cs {
				if c.Slot() != hruntime.InfraName {
					ps.status.Containers = append(ps.status.Containers, containerStatus(c, ps))
				}
			}
			continue
		}
		delete(s.pods.states, id)
	}
}

func (s *Syncer) podStatus(p Pod, ps *podState, cs []hruntime.Container, now time.Time) PodStatus {
	m := p.Manifest
	// slots stays the caller's (on the stack, as it was before it was
	// filled by a function of its own).
	slots := map[string]hruntime.Container{}
	spec := s.syncs.specs.of(m)
	st := PodStatus{ID: m.ID, Source: p.Source, Revision: p.Revision, LastAction: ps.lastAction, Manifest: spec.redactedWith(s.opts.EnvHasher),
		InfraHash: latestBySlot(slots, cs)}
	// missing counts the containers not there, outdated those there with
	// another spec (a change waits: dependencies, a hold, a window).
	running, succeeded, failedExit, missing, outdated := 0, 0, 0, 0, 0
	crashLoop := ""
	for i, mc := range m.Containers {
		c, ok := slots[mc.Name]
		want := spec.hashes[i]
		cst := ContainerStatus{Name: mc.Name, Image: mc.Image, Hash: want, State: "absent"}
		if ok {
			cst = containerStatus(c, ps)
			cst.Image = mc.Image
			cst.Published = randomlyPublished(mc, slots)
		} else {
			missing++
		}
		if ok && c.Hash() != want {
			outdated++
		}
		switch {
		case !ok:
		case c.State == hruntime.StateRunning:
			running++
		case c.State == hruntime.StateExited && c.ExitCode == 0:
			succeeded++
		case c.State == hruntime.StateExited:
			failedExit++
			cst.LastError = fmt.Sprintf("exited (%d)", c.ExitCode)
		}
		if ps.crashLooping(mc.Name, now) && crashLoop == "" {
			crashLoop = mc.Name
		}
		st.Containers = append(st.Containers, cst)
	}
	n := len(m.Containers)
	switch {
	case ps.failReason != "":
		st.Phase, st.Reason, st.Message = PhaseFailed, ps.failReason, ps.failMessage
		for i := range st.Containers {
			if st.Containers[i].LastError == "" {
				st.Containers[i].LastError = ps.failMessage
			}
		}
	case ps.pulling != "":
		st.Phase, st.Reason, st.Message = PhasePending, ReasonPulling, ps.pulling
		if ps.building {
			st.Reason = ReasonBuilding
		}
	case ps.initializing != "" && missing > 0:
		st.Phase, st.Reason, st.Message = PhasePending, ReasonInitializing, ps.initializing
	case crashLoop != "":
		st.Phase, st.Reason = PhaseFailed, ReasonCrashLoop
		st.Message = fmt.Sprintf("container %s keeps crashing", crashLoop)
	case ps.waiting != "" && missing+outdated > 0:
		st.Phase, st.Reason, st.Message = PhasePending, ReasonWaiting, ps.waiting

	case missing > 0:
		st.Phase = PhasePending
	case running == n:
		st.Phase = PhaseRunning
	case m.RestartPolicy != manifest.RestartAlways && running == 0 && succeeded == n:
		st.Phase = PhaseSucceeded
	case m.RestartPolicy == manifest.RestartNever && running == 0 && failedExit > 0:
		st.Phase, st.Reason = PhaseFailed, "Error"
		st.Message = "a container exited with a non-zero code and restartPolicy is Never"
	case running > 0:
		st.Phase = PhaseRunning
	default:
		st.Phase = PhasePending
	}
	ps.heldReason(&st)
	return st
}

// heldReason gives st, when it has no reason of its own, the pod's hold
// or the maintenance window it waits for.
func (ps *podState) heldReason(st *PodStatus) {
	if st.Reason == "" && ps.held != "" {
		st.Reason, st.Message = ReasonHeld, ps.held
	} else if st.Reason == "" && ps.window != "" {
		st.Reason, st.Message = ReasonWindow, ps.window
	}
}

// latestBySlot puts each slot's container (slotsOver: the latest created)
// of a pod's containers cs in slots and returns the spec hash of its infra
// container ("" for none).
func latestBySlot(slots map[string]hruntime.Container, cs []hruntime.Container) (infraHash string) {
	for _, c := range cs {
		if prev, dup := slots[c.Slot()]; !dup || slotsOver(c, prev) {
			slots[c.Slot()] = c
		}
	}
	return slots[hruntime.InfraName].Hash()
}

// randomlyPublished are the host ports the engine picked for the ports
// manifest container mc publishes on a random one, read from its
// container in slots (or the pod's infra container there, which
// publishes a pod of several); nil (nothing made) without one.
func randomlyPublished(mc manifest.Container, slots map[string]hruntime.Container) []string {
	c, ok := slots[hruntime.InfraName]
	if !ok {
		c = slots[mc.Name]
	}
	var out []string
	for _, p := range mc.Ports {
		if !p.RandomHostPort {
			continue
		}
		for _, pp := range c.Published {
			if int(pp.PrivatePort) == p.ContainerPort && strings.EqualFold(pp.Type, cmp.Or(p.Protocol, "tcp")) && pp.PublicPort != 0 {
				out = append(out, fmt.Sprintf("%s->%d/%s", net.JoinHostPort(pp.IP, strconv.Itoa(int(pp.PublicPort))), pp.PrivatePort, pp.Type))
			}
		}
	}
	return out
}

// containerStatus is the status of container c; it also records in ps
// that c has started, unless it never has.
func containerStatus(c hruntime.Container, ps *podState) ContainerStatus {
	if c.State != hruntime.StateCreated {
		// It has started (its start event may not have come, or came
		// while hostlet did not listen): its next start is a restart.
		ps.knownStarted(c.Slot(), c.ID)
	}
	cst := ContainerStatus{Name: c.Slot(), Image: c.Image, Hash: c.Hash(), State: c.State, ContainerID: c.ID, health: c.Health}
	if t, ok := ps.started[c.Slot()]; ok {
		cst.StartedAt = t.UTC().Format(time.RFC3339)
	}
	return cst
}

func joinReasons(r []string) string { return strings.Join(r, "; ") }

// restartStore counts restarts per container slot and persists them, so
// counts survive hostlet restarts. It is guarded by the Syncer's mu.
type restartStore struct {
	file  statefile.File
	Slots map[string]*slotRestarts `json:"slots"`
}

// RestartsFile is the file under stateDir holding the restart counts.
const RestartsFile = "restarts.json"

type slotRestarts struct {
	// Count is every restart of the slot (crash, probe, recovery).
	Count int `json:"count"`
	// ContainerID and EngineCount: the engine's restart count last seen for
	// the slot's container, to add restarts that happened while hostlet was
	// down.
	ContainerID string `json:"containerID,omitempty"`
	EngineCount int    `json:"engineCount"`
}

func slotKey(pod, slot string) string { return pod + "/" + slot }

// loadRestarts reads the restart counts saved in stateDir. A file that
// cannot be read or decoded does not stop hostlet: it is moved aside
// (atomicfile.Damaged), the counts start from zero (the engine's own
// counts are added from the next list on), and the problem is kept for
// TrackStateFiles.
func loadRestarts(stateDir string, clk clock.Clock) (*restartStore, error) {
	rs := &restartStore{Slots: map[string]*slotRestarts{}}
	rs.file.Init(stateDir, RestartsFile, clk, nil)
	rs.file.Load(func(b []byte) error { return decodeRestarts(b, rs) }, func() { rs.Slots = map[string]*slotRestarts{} })
	return rs, nil
}

// decodeRestarts decodes saved restart counts into rs, refusing what is
// not a restart count file.
func decodeRestarts(b []byte, rs *restartStore) error {
	var saved struct {
		Slots map[string]*slotRestarts `json:"slots"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("decode restart counts: %w", err)
	}
	if saved.Slots == nil {
		return errors.New("decode restart counts: no slots")
	}
	for k, sr := range saved.Slots {
		if sr == nil || sr.Count < 0 || sr.EngineCount < 0 || !strings.Contains(k, "/") {
			return fmt.Errorf("decode restart counts: slot %q is not a restart count", k)
		}
	}
	rs.Slots = saved.Slots
	return nil
}

// TrackStateFiles reports the syncer's state file (restarts.json) to p: a
// problem found when it was loaded (logged here), and every save that
// fails from now on; a good save clears them.
func (s *Syncer) TrackStateFiles(p *atomicfile.Problems) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.pods.restarts.file.Track(p); d != nil {
		s.log.Warn("restart counts unreadable; counting from zero", "file", d.File, "keptAs", d.KeptAs, "error", d.Error)
	}
	s.rollouts.Track(p)
	if d := s.keyDamaged; d != nil {
		// Logged when it was found (loadEnvHasher).
		p.Report(*d)
	}
}

func (rs *restartStore) slot(pod, slot string) *slotRestarts {
	k := slotKey(pod, slot)
	sr := rs.Slots[k]
	if sr == nil {
		sr = &slotRestarts{}
		rs.Slots[k] = sr
	}
	return sr
}

func (rs *restartStore) count(pod, slot string) int {
	if sr := rs.Slots[slotKey(pod, slot)]; sr != nil {
		return sr.Count
	}
	return 0
}

func (rs *restartStore) add(pod, slot string, n int) {
	rs.slot(pod, slot).Count += n
	rs.file.Changed()
}

// engineRestart counts a crash the engine restarts by policy; the engine's
// own count moves with it.
func (rs *restartStore) engineRestart(pod, slot, id string) {
	sr := rs.slot(pod, slot)
	sr.Count++
	if sr.ContainerID == id {
		sr.EngineCount++
	}
	rs.file.Changed()
}

// observe adds the engine restarts of container id not counted yet.
func (rs *restartStore) observe(pod, slot, id string, engineCount int) {
	sr := rs.slot(pod, slot)
	if sr.ContainerID == id && engineCount > sr.EngineCount {
		sr.Count += engineCount - sr.EngineCount
	}
	sr.ContainerID, sr.EngineCount = id, engineCount
	rs.file.Changed()
}

// replaced notes that the slot has a new container (the engine's count
// starts from zero again).
func (rs *restartStore) replaced(pod, slot string) {
	sr := rs.slot(pod, slot)
	sr.ContainerID, sr.EngineCount = "", 0
	rs.file.Changed()
}

func (rs *restartStore) forget(pod string) {
	for k := range rs.Slots {
		if strings.HasPrefix(k, pod+"/") {
			delete(rs.Slots, k)
			rs.file.Changed()
		}
	}
}

// snapshot takes a copy of the counts to save (see
// statefile.File.Snapshot).
func (rs *restartStore) snapshot() *statefile.Snapshot {
	if !rs.file.Pending() {
		return nil
	}
	saved := &restartStore{Slots: make(map[string]*slotRestarts, len(rs.Slots))}
	for k, sr := range rs.Slots {
		saved.Slots[k] = new(*sr)
	}
	return rs.file.Snapshot(saved)
}

// write saves a snapshot of the counts (see statefile.File.Write).
func (rs *restartStore) write(snap *statefile.Snapshot) error { return rs.file.Write(snap) }

// Running returns the start of the sync pass now running, zero when none
// is (the agent's watchdog compares it with the sync's deadline).
func (s *Syncer) Running() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loop.running
}
