// Package synctest holds test doubles for the reconciler: Fake, an
// in-memory engine implementing hsync.FullRuntime with a log of every call,
// and Counting, a wrapper that counts the calls made to any FullRuntime
// (the real Docker one included). Converged makes the container list an
// engine would report once a set of pods has been applied, for plan
// benchmarks.
package synctest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// Call is one call made to a Fake: the method name and its main argument
// (a container ID, name, image or volume name; "" for List and ListVolumes).
type Call struct {
	Method string
	Arg    string
}

func (c Call) String() string {
	if c.Arg == "" {
		return c.Method
	}
	return c.Method + "(" + c.Arg + ")"
}

// Fake is an in-memory engine. Containers it creates start in state
// "created", run after Start and exit with code 0 after Stop; Exit
// simulates a crash, after which the engine's restart policy applies, as in
// Docker. It sends the container events Docker would. It is safe for
// concurrent use.
type Fake struct {
	mu         gosync.Mutex
	calls      []Call
	containers map[string]*fakeContainer
	names      map[string]string // name -> ID
	volumes    map[string]map[string]string
	networks   map[string]hruntime.NetworkSpec
	images     map[string]bool
	pullErrs   map[string]error
	// builds are the images built (Build), by tag, with the pod they are
	// for; buildErrs the tags whose builds fail (FailBuild).
	builds    map[string]string
	buildSeq  map[string]int
	buildErrs map[string]error
	// blocked holds the images whose pulls wait, until released (BlockPull).
	blocked   map[string]chan struct{}
	execCodes map[string]int
	// broken holds the containers whose start always fails (BreakStart).
	broken map[string]bool
	// startErr, when set, fails every start (FailStarts).
	startErr error
	// podmanDependents: a container others joined (NetworkMode
	// container:<id>) cannot be removed (RefuseRemovingJoined).
	podmanDependents bool
	subs             []*subscriber
	// exited is closed, and made anew, when a container stops running
	// (Wait); nil until a Wait needs it.
	exited chan struct{}
	// imageUsers are the images' USER by reference (SetImageUser).
	imageUsers map[string]string
	// volumePaths are the volumes' folders on the host
	// (SetVolumeHostPath); hostIDsErr what SameHostIDs says
	// (SetSameHostIDs).
	volumePaths map[string]string
	hostIDsErr  error
	nextID      int
	clock       time.Time
	// now reads the time events are dated by (SetClock); nil: the wall
	// clock.
	clockNow func() time.Time
}

// subscriber is one Events channel. Its queue is unbounded, so the fake
// never blocks an engine call on a consumer that is busy (a syncer applies
// a plan before it reads the events the plan caused, as with the real
// engine).
type subscriber struct {
	mu    gosync.Mutex
	queue []hruntime.Event
	wake  chan struct{}
}

func (s *subscriber) push(e hruntime.Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) pop() (hruntime.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return hruntime.Event{}, false
	}
	e := s.queue[0]
	s.queue = s.queue[1:]
	return e, true
}

type fakeContainer struct {
	c            hruntime.Container
	spec         hruntime.ContainerSpec
	restartCount int
	startedAt    time.Time
}

var _ hsync.FullRuntime = (*Fake)(nil)

// NewFake returns an empty engine.
func NewFake() *Fake {
	return &Fake{
		containers: map[string]*fakeContainer{},
		names:      map[string]string{},
		volumes:    map[string]map[string]string{},
		networks:   map[string]hruntime.NetworkSpec{},
		images:     map[string]bool{},
		pullErrs:   map[string]error{},
		blocked:    map[string]chan struct{}{},
		execCodes:  map[string]int{},
		broken:     map[string]bool{},
	}
}

// SetClock dates the engine's events and starts by now (a fake clock's
// Now) instead of the wall clock.
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clockNow = now
}

// BreakStart stops container id and makes every start of it fail, as the
// engine does for a container whose start an engine restart cut ("task
// already exists", Exited (128)). Containers created anew are not broken.
func (f *Fake) BreakStart(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("break %s: %w", id, hruntime.ErrNotFound)
	}
	f.broken[fc.c.ID] = true
	if fc.c.State == hruntime.StateRunning {
		fc.c.State, fc.c.Status, fc.c.ExitCode = hruntime.StateExited, "Exited (128) 1 second ago", 128
		f.emit(f.event("die", fc))
	}
	return nil
}

func (f *Fake) record(method, arg string) {
	f.calls = append(f.calls, Call{Method: method, Arg: arg})
}

// now reads the fake's clock: the wall clock, or what SetClock gave.
func (f *Fake) now() time.Time {
	if f.clockNow != nil {
		return f.clockNow()
	}
	return time.Now()
}

// tick is the time of an event: now, made strictly increasing, so every
// event gets a distinct time.
func (f *Fake) tick() time.Time {
	now := f.now()
	if !now.After(f.clock) {
		now = f.clock.Add(time.Microsecond)
	}
	f.clock = now
	return now
}

// event makes an event of container fc; the caller holds mu.
func (f *Fake) event(action string, fc *fakeContainer) hruntime.Event {
	return hruntime.Event{Action: action, ContainerID: fc.c.ID, Labels: maps.Clone(fc.c.Labels), ExitCode: fc.c.ExitCode, Time: f.tick()}
}

// emit queues events for every subscriber; the caller holds mu. It never
// blocks.
func (f *Fake) emit(evs ...hruntime.Event) {
	for _, sub := range f.subs {
		for _, e := range evs {
			sub.push(e)
		}
	}
}

// Calls returns every call made since the Fake was made or last Reset, in
// order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Reset forgets the calls made so far (not the containers).
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// FailStarts makes every Start fail with err, as an engine just
// restarted can; a nil err makes starts succeed again.
func (f *Fake) FailStarts(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startErr = err
}

// FailPull makes EnsureImage of ref fail with err (wrapped to match
// hruntime.ErrImagePull); a nil err makes it succeed again.
func (f *Fake) FailPull(ref string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.pullErrs, ref)
		return
	}
	f.pullErrs[ref] = err
}

// SetExecCode sets the exit code of every exec in container id (default 0).
func (f *Fake) SetExecCode(id string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execCodes[id] = code
}

// Exit makes a running container's process exit with code, as a crash
// does: a "die" event, then, as the engine's restart policy says (the
// spec's RestartPolicy), a restart with a "start" event.
func (f *Fake) Exit(id string, code int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("exit %s: %w", id, hruntime.ErrNotFound)
	}
	if fc.c.State != hruntime.StateRunning {
		return fmt.Errorf("exit %s: not running: %w", id, hruntime.ErrConflict)
	}
	fc.c.State, fc.c.ExitCode = hruntime.StateExited, code
	fc.c.Status = fmt.Sprintf("Exited (%d) 1 second ago", code)
	f.emit(f.event("die", fc))
	f.exitedLocked()
	switch p := fc.spec.RestartPolicy; {
	case p == hruntime.RestartAlways, p == hruntime.RestartOnFailure && code != 0:
		fc.restartCount++
		f.run(fc)
	}
	return nil
}

// SetImageUser makes image ref run as user (its USER; none: root).
func (f *Fake) SetImageUser(ref, user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.imageUsers == nil {
		f.imageUsers = map[string]string{}
	}
	f.imageUsers[ref] = user
}

// ImageUser implements hsync.ImageEnsurer.
func (f *Fake) ImageUser(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ImageUser", ref)
	return f.imageUsers[ref], nil
}

// Wait implements hsync.InitWaiter: the exit code of container id once
// it is not running (at once for one that is not), or ctx's error.
func (f *Fake) Wait(ctx context.Context, id string) (int, error) {
	for {
		f.mu.Lock()
		fc, ok := f.lookup(id)
		if !ok {
			f.mu.Unlock()
			return 0, fmt.Errorf("wait for container %s: %w", id, hruntime.ErrNotFound)
		}
		if fc.c.State != hruntime.StateRunning {
			code := fc.c.ExitCode
			f.mu.Unlock()
			return code, nil
		}
		if f.exited == nil {
			f.exited = make(chan struct{})
		}
		exited := f.exited
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-exited:
		}
	}
}

// exitedLocked wakes the Waits: a container stopped running (f.mu held).
func (f *Fake) exitedLocked() {
	if f.exited != nil {
		close(f.exited)
		f.exited = nil
	}
}

// Emit sends an event to every Events subscriber.
func (f *Fake) Emit(e hruntime.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emit(e)
}

// List implements hsync.Lister.
func (f *Fake) List(context.Context) ([]hruntime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("List", "")
	out := make([]hruntime.Container, 0, len(f.containers))
	for _, fc := range f.containers {
		c := fc.c
		c.Labels = maps.Clone(c.Labels)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b hruntime.Container) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Create implements hsync.Engine. A name in use is an hruntime.ErrConflict.
func (f *Fake) Create(_ context.Context, spec hruntime.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Create", spec.Name)
	if _, taken := f.names[spec.Name]; taken {
		return "", fmt.Errorf("create container %q: name in use: %w", spec.Name, hruntime.ErrConflict)
	}
	if strings.HasPrefix(spec.NetworkMode, "container:") {
		if _, ok := f.containers[strings.TrimPrefix(spec.NetworkMode, "container:")]; !ok {
			return "", fmt.Errorf("create container %q: network container: %w", spec.Name, hruntime.ErrNotFound)
		}
	}
	f.nextID++
	id := fmt.Sprintf("%064x", f.nextID)
	c := hruntime.Container{
		ID: id, Name: spec.Name, Image: spec.Image, Labels: maps.Clone(spec.Labels),
		State: hruntime.StateCreated, Status: "Created", Created: f.tick(),
	}
	if spec.NetworkMode == "" {
		c.IP = fmt.Sprintf("10.%d.%d.%d", f.nextID>>16&255, f.nextID>>8&255, f.nextID&255)
	}
	f.containers[id] = &fakeContainer{c: c, spec: spec}
	f.names[spec.Name] = id
	return id, nil
}

// lookup finds a container by ID or name; the caller holds mu.
func (f *Fake) lookup(idOrName string) (*fakeContainer, bool) {
	if fc, ok := f.containers[idOrName]; ok {
		return fc, true
	}
	if id, ok := f.names[idOrName]; ok {
		return f.containers[id], true
	}
	return nil, false
}

// Start implements hsync.Engine.
func (f *Fake) Start(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Start", id)
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("start container %s: %w", id, hruntime.ErrNotFound)
	}
	if f.broken[fc.c.ID] {
		return fmt.Errorf("start container %s: failed to create task for container: task %s: already exists: %w", id, fc.c.ID, hruntime.ErrStaleTask)
	}
	if f.startErr != nil {
		return fmt.Errorf("start container %s: %w", id, f.startErr)
	}
	if fc.c.State != hruntime.StateRunning {
		f.run(fc)
	}
	return nil
}

// run starts fc's process; the caller holds mu.
func (f *Fake) run(fc *fakeContainer) {
	fc.c.State, fc.c.Status, fc.c.ExitCode = hruntime.StateRunning, "Up 1 second", 0
	ev := f.event("start", fc)
	// The start time an inspect reports is the clock's (as an engine's
	// is never later than what its clock reads after); the event's time
	// may be a tick later, to keep the events in order.
	fc.startedAt = f.now()
	f.emit(ev)
}

// Stop implements hsync.Engine.
func (f *Fake) Stop(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Stop", id)
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("stop container %s: %w", id, hruntime.ErrNotFound)
	}
	if fc.c.State == hruntime.StateRunning {
		fc.c.State, fc.c.Status, fc.c.ExitCode = hruntime.StateExited, "Exited (0) 1 second ago", 0
		f.emit(f.event("die", fc), f.event("stop", fc))
		f.exitedLocked()
	}
	return nil
}

// NoRestart implements hsync.Engine: the container's restart policy
// becomes none.
func (f *Fake) NoRestart(_ context.Context, id string) error {
	return f.setRestartPolicy("NoRestart", id, hruntime.RestartNo)
}

// RestoreRestart implements hsync.Engine: the container's restart policy
// becomes policy.
func (f *Fake) RestoreRestart(_ context.Context, id, policy string) error {
	return f.setRestartPolicy("RestoreRestart", id, policy)
}

// setRestartPolicy records method and sets container id's restart policy.
func (f *Fake) setRestartPolicy(method, id, policy string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(method, id)
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("update container %s: %w", id, hruntime.ErrNotFound)
	}
	fc.spec.RestartPolicy = policy
	return nil
}

// Remove implements hsync.Engine. A missing container is not an error.
func (f *Fake) Remove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Remove", id)
	if fc, ok := f.lookup(id); ok {
		if f.podmanDependents {
			for _, other := range f.containers {
				if other.spec.NetworkMode == "container:"+fc.c.ID {
					return fmt.Errorf("remove container %s: container %s has dependent containers which must be removed before it", fc.c.ID, fc.c.ID)
				}
			}
		}
		if fc.c.State == hruntime.StateRunning {
			fc.c.State, fc.c.ExitCode = hruntime.StateExited, 137
			f.emit(f.event("die", fc))
		}
		delete(f.containers, fc.c.ID)
		delete(f.names, fc.c.Name)
		f.emit(f.event("destroy", fc))
	}
	return nil
}

// RefuseRemovingJoined makes the engine refuse to remove a container
// that another joined (its network namespace), as Podman's
// Docker-compatible API does.
func (f *Fake) RefuseRemovingJoined() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.podmanDependents = true
}

// Rename implements hsync.Namer. A name in use is an
// hruntime.ErrConflict.
func (f *Fake) Rename(_ context.Context, id, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Rename", name)
	fc, ok := f.lookup(id)
	if !ok {
		return fmt.Errorf("rename container %s: %w", id, hruntime.ErrNotFound)
	}
	if _, taken := f.names[name]; taken {
		return fmt.Errorf("rename container %s to %q: name in use: %w", id, name, hruntime.ErrConflict)
	}
	delete(f.names, fc.c.Name)
	fc.c.Name = name
	f.names[name] = fc.c.ID
	f.emit(f.event("rename", fc))
	return nil
}

// NameHolder implements hsync.Namer: every container of the fake is
// hostlet's.
func (f *Fake) NameHolder(_ context.Context, name string) (hruntime.Holder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("NameHolder", name)
	id, ok := f.names[name]
	if !ok {
		return hruntime.Holder{}, nil
	}
	c := f.containers[id].c
	return hruntime.Holder{ID: id, Image: c.Image, Proven: true, Labels: maps.Clone(c.Labels)}, nil
}

// BlockPull makes image ref absent and every pull of it wait until release
// is called or the pull's ctx ends; released, the pull succeeds (or fails
// as FailPull says) and the image is present. Until then EnsureImage with
// policy Never reports the image not present, as the engine does.
func (f *Fake) BlockPull(ref string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.blocked[ref] = gate
	return gosync.OnceFunc(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		close(gate)
		if f.blocked[ref] == gate {
			delete(f.blocked, ref)
		}
	})
}

// EnsureImage implements hsync.ImageEnsurer. Images are present unless
// blocked (BlockPull); FailPull makes every call for ref fail.
func (f *Fake) EnsureImage(ctx context.Context, ref, policy string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("EnsureImage", ref)
	if strings.HasPrefix(ref, manifest.BuildRepository+"/") {
		// A built image is there once built.
		if _, ok := f.builds[ref]; !ok {
			return fmt.Errorf("image %s not present and imagePullPolicy is Never: %w: %w", ref, hruntime.ErrImageNeverPull, hruntime.ErrNotFound)
		}
		return nil
	}
	if gate, ok := f.blocked[ref]; ok {
		if policy == hruntime.PullNever {
			return fmt.Errorf("image %s not present and imagePullPolicy is Never: %w: %w", ref, hruntime.ErrImageNeverPull, hruntime.ErrNotFound)
		}
		f.mu.Unlock()
		select {
		case <-gate:
			f.mu.Lock()
		case <-ctx.Done():
			f.mu.Lock()
			return fmt.Errorf("pull image %s: %w", ref, ctx.Err())
		}
	}
	if err := f.pullErrs[ref]; err != nil {
		return fmt.Errorf("pull image %s: %w: %w", ref, hruntime.ErrImagePull, err)
	}
	f.images[ref] = true
	return nil
}

// FailBuild makes every build of tag fail with err (nil: succeed again).
func (f *Fake) FailBuild(tag string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buildErrs == nil {
		f.buildErrs = map[string]error{}
	}
	f.buildErrs[tag] = err
}

// Build implements hsync.Builder: the context is written out (and
// dropped), and every tag of the spec is then present.
func (f *Fake) Build(ctx context.Context, spec hruntime.BuildSpec) (hruntime.BuildResult, error) {
	if len(spec.Tags) == 0 || spec.Context == nil {
		return hruntime.BuildResult{}, errors.New("build: no tag or no context")
	}
	if err := spec.Context(io.Discard); err != nil {
		return hruntime.BuildResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Build", spec.Tags[0])
	if err := f.buildErrs[spec.Tags[0]]; err != nil {
		return hruntime.BuildResult{Log: []string{"Step 1/1 : RUN false"}}, fmt.Errorf("build image %s: %w: %w", spec.Tags[0], hruntime.ErrBuild, err)
	}
	if f.builds == nil {
		f.builds, f.buildSeq = map[string]string{}, map[string]int{}
	}
	for _, t := range spec.Tags {
		f.builds[t] = spec.Pod
		f.buildSeq[t] = len(f.buildSeq) + 1
	}
	return hruntime.BuildResult{Duration: time.Millisecond}, nil
}

// ListBuilt implements hsync.Builder: every tag built for pod, one image
// each, the newest first.
func (f *Fake) ListBuilt(_ context.Context, pod string) ([]hruntime.BuiltImage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hruntime.BuiltImage
	for _, t := range slices.Sorted(maps.Keys(f.builds)) {
		if f.builds[t] == pod {
			out = append(out, hruntime.BuiltImage{ID: t, Tags: []string{t}, Created: time.Unix(int64(f.buildSeq[t]), 0)})
		}
	}
	slices.SortFunc(out, func(a, b hruntime.BuiltImage) int { return b.Created.Compare(a.Created) })
	return out, nil
}

// RemoveImage implements hsync.Builder: a built image no container uses
// is removed.
func (f *Fake) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveImage", ref)
	for _, fc := range f.containers {
		if fc.spec.Image == ref {
			return fmt.Errorf("remove image %s: %w", ref, hruntime.ErrConflict)
		}
	}
	if _, ok := f.builds[ref]; !ok {
		return fmt.Errorf("remove image %s: %w", ref, hruntime.ErrNotFound)
	}
	delete(f.builds, ref)
	return nil
}

// Built lists the tags built and not removed, sorted.
func (f *Fake) Built() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.builds))
}

// EnsureVolume implements hsync.Volumes.
func (f *Fake) EnsureVolume(_ context.Context, name string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("EnsureVolume", name)
	if _, ok := f.volumes[name]; !ok {
		f.volumes[name] = maps.Clone(labels)
	}
	return nil
}

// RemoveVolume implements hsync.Volumes.
func (f *Fake) RemoveVolume(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveVolume", name)
	delete(f.volumes, name)
	return nil
}

// SetVolumeHostPath makes VolumeHostPath answer dir for the volume name
// ("": a volume of a driver that keeps its files elsewhere, as every
// volume is until given a folder).
func (f *Fake) SetVolumeHostPath(name, dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.volumePaths == nil {
		f.volumePaths = map[string]string{}
	}
	f.volumePaths[name] = dir
}

// SetSameHostIDs makes SameHostIDs answer err (nil: the host's ids).
func (f *Fake) SetSameHostIDs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hostIDsErr = err
}

// VolumeHostPath implements hsync.VolumeOwners: the folder
// SetVolumeHostPath gave the volume, which must exist (EnsureVolume).
func (f *Fake) VolumeHostPath(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("VolumeHostPath", name)
	if _, ok := f.volumes[name]; !ok {
		return "", fmt.Errorf("volume %q: %w", name, hruntime.ErrNotFound)
	}
	dir := f.volumePaths[name]
	if dir == "" {
		return "", fmt.Errorf("volume %q: driver fake keeps its files out of hostlet's reach", name)
	}
	return dir, nil
}

// SameHostIDs implements hsync.VolumeOwners.
func (f *Fake) SameHostIDs() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hostIDsErr
}

// CheckVolume implements hsync.Volumes.
func (f *Fake) CheckVolume(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CheckVolume", name)
	if _, ok := f.volumes[name]; !ok {
		return fmt.Errorf("volume %q: %w", name, hruntime.ErrNotFound)
	}
	return nil
}

// ListVolumes implements hsync.Volumes.
func (f *Fake) ListVolumes(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListVolumes", "")
	return slices.Sorted(maps.Keys(f.volumes)), nil
}

// EnsureNetwork implements hsync.Networks: an external network must have
// been added with AddNetwork.
func (f *Fake) EnsureNetwork(_ context.Context, n hruntime.NetworkSpec, _ map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("EnsureNetwork", n.Name)
	if _, ok := f.networks[n.Name]; !ok {
		if n.External {
			return fmt.Errorf("network %q is declared external and does not exist: %w", n.Name, hruntime.ErrNotFound)
		}
		f.networks[n.Name] = n
	}
	return nil
}

// RemoveNetwork implements hsync.Networks.
func (f *Fake) RemoveNetwork(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveNetwork", name)
	if n, ok := f.networks[name]; ok && !n.External {
		delete(f.networks, name)
	}
	return nil
}

// ListNetworks implements hsync.Networks: the networks it made.
func (f *Fake) ListNetworks(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListNetworks", "")
	var out []string
	for name, n := range f.networks {
		if !n.External {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SetHealth sets the Docker healthcheck state of the pod's container in
// slot (hruntime.HealthHealthy, ...), as the engine's list reports it.
func (f *Fake) SetHealth(pod, slot, health string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fc := range f.containers {
		if fc.c.Pod() == pod && fc.c.Slot() == slot {
			fc.c.Health = health
		}
	}
}

// AddNetwork adds a network made outside hostlet (external).
func (f *Fake) AddNetwork(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.networks[name] = hruntime.NetworkSpec{Name: name, External: true}
}

// Networks returns the names of the networks there, sorted.
func (f *Fake) Networks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.networks))
}

// Inspect implements hsync.Inspector.
func (f *Fake) Inspect(_ context.Context, id string) (hruntime.Details, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Inspect", id)
	fc, ok := f.lookup(id)
	if !ok {
		return hruntime.Details{}, fmt.Errorf("inspect container %s: %w", id, hruntime.ErrNotFound)
	}
	return hruntime.Details{
		ID: fc.c.ID, RestartCount: fc.restartCount, StartedAt: fc.startedAt,
		ExitCode: fc.c.ExitCode, Running: fc.c.State == hruntime.StateRunning,
		Labels: maps.Clone(fc.c.Labels), IP: fc.c.IP, RestartPolicy: cmp.Or(fc.spec.RestartPolicy, hruntime.RestartNo),
		StopTimeout: fc.spec.StopTimeout,
	}, nil
}

// Events implements hsync.EventSource: the channel carries the events of
// every container (start, die, stop, destroy, and what Exit and Emit send)
// made after the call, and closes when ctx ends.
func (f *Fake) Events(ctx context.Context) <-chan hruntime.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Events", "")
	sub := &subscriber{wake: make(chan struct{}, 1)}
	out := make(chan hruntime.Event)
	f.subs = append(f.subs, sub)
	go func() {
		defer close(out)
		defer func() {
			f.mu.Lock()
			f.subs = slices.DeleteFunc(f.subs, func(s *subscriber) bool { return s == sub })
			f.mu.Unlock()
		}()
		for {
			e, ok := sub.pop()
			if !ok {
				select {
				case <-ctx.Done():
					return
				case <-sub.wake:
					continue
				}
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Exec implements hsync.Execer: it returns the code set by SetExecCode,
// else 1 for the command "false" and 0 for any other.
func (f *Fake) Exec(_ context.Context, id string, cmd []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Exec", id)
	fc, ok := f.lookup(id)
	if !ok {
		return -1, fmt.Errorf("exec in container %s: %w", id, hruntime.ErrNotFound)
	}
	if fc.c.State != hruntime.StateRunning {
		return -1, fmt.Errorf("exec %v in container %s: not running: %w", cmd, id, hruntime.ErrConflict)
	}
	if code, set := f.execCodes[fc.c.ID]; set || len(cmd) == 0 || cmd[0] != "false" {
		return code, nil
	}
	// "false" fails, as it does in an image.
	return 1, nil
}

// Spec returns the spec container id was created from.
func (f *Fake) Spec(id string) (hruntime.ContainerSpec, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc, ok := f.lookup(id)
	if !ok {
		return hruntime.ContainerSpec{}, false
	}
	return fc.spec, true
}

// Converged returns the containers an engine lists once pods have been
// applied to it from scratch: it plans and applies them on a new Fake.
func Converged(instance, infraImage string, pods []hsync.Pod) ([]hruntime.Container, error) {
	f := NewFake()
	ctx := context.Background()
	plan := hsync.MakePlan(pods, nil, hsync.PlanOptions{})
	log := slog.New(slog.DiscardHandler)
	for _, r := range hsync.Apply(ctx, f, plan, hsync.ApplyOptions{Instance: instance, InfraImage: infraImage, Concurrency: 1}, log) {
		if r.Err != nil {
			return nil, fmt.Errorf("apply pod %s: %w", r.ID, r.Err)
		}
	}
	return f.List(ctx)
}
