package sync

import (
	"context"
	"errors"
	"fmt"
	gosync "sync"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// Reasons of a pod's init containers, as status and events report them.
const (
	// ReasonInitFailed: an init container exited non-zero; it runs again
	// after the pod's backoff.
	ReasonInitFailed = "InitContainerFailed"
	// ReasonInitializing marks a Pending pod whose init containers run.
	ReasonInitializing = "PodInitializing"
)

// errStepInit tags the failure of an init container's run (its exit
// code); its create or start fail as an app container's do.
var errStepInit = errors.New("init container")

// InitWaiter waits for a container to exit and returns its exit code.
type InitWaiter interface {
	Wait(ctx context.Context, id string) (int, error)
}

// InitRuns remembers, by pod, the init container whose failure an apply
// reported: the pod's next apply (after its backoff) runs it again. It
// holds one entry per pod at most; the zero value is ready, and a nil
// *InitRuns remembers nothing (every apply reports the failure again).
type InitRuns struct {
	mu       gosync.Mutex
	reported map[string]string
	// walked: the pod's volumes were given to its fsGroup for this
	// version of it (manifest.PodHash), while its init containers run:
	// the passes that only take them further walk nothing again.
	walked map[string]string
}

// walkedFor reports whether pod's volumes were walked for version hash
// since its init containers last went through.
func (r *InitRuns) walkedFor(pod, hash string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.walked[pod] == hash
}

// walkedNow notes that pod's volumes were walked for version hash.
func (r *InitRuns) walkedNow(pod, hash string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.walked == nil {
		r.walked = map[string]string{}
	}
	r.walked[pod] = hash
}

// failed notes that the failure of init container id of pod was reported.
func (r *InitRuns) failed(pod, id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported == nil {
		r.reported = map[string]string{}
	}
	r.reported[pod] = id
}

// again reports whether init container id of pod failed and was reported
// (failed): it is to run again. The mark stays until the pod's next
// failure or its init containers are through: a run again that cannot
// remove the failed one tries again.
func (r *InitRuns) again(pod, id string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reported[pod] == id
}

// done forgets pod: its init containers went through (the next create
// walks its volumes again).
func (r *InitRuns) done(pod string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, pod)
	delete(r.walked, pod)
}

// runInits runs the pod's init containers, in order, each once the one
// before exited 0, when the apply creates an app container (a restart
// runs none). The run is the pod version's and infra container's
// (podspec.InitGeneration): an init container already through for it is
// not run again. While one runs the apply stops there (initializing); the
// container's exit is an engine event, and the sync it brings goes on.
// With WaitInit (hostlet run --once) it waits instead, within the pod's
// progress deadline.
func (ap *podApplication) runInits(ctx context.Context) (initializing bool, err error) {
	if len(ap.m.InitContainers) == 0 || ap.initsDone || !ap.createsApp() {
		return false, nil
	}
	gen := podspec.InitGeneration(*ap.pod, ap.infraID)
	for j, c := range ap.m.InitContainers {
		done, err := ap.runInit(ctx, j, gen)
		if err != nil {
			return false, err
		}
		if !done {
			ap.res.Initializing = fmt.Sprintf("init container %s (%d of %d) running", c.Name, j+1, len(ap.m.InitContainers))
			return true, nil
		}
	}
	ap.opts.Inits.done(ap.m.ID)
	ap.initsDone = true
	return false, nil
}

// runInitsFirst runs the init containers before anything of the pod is
// taken down when the infra container whose namespace they join runs
// and stays: the running version serves while they run, and one that
// fails leaves it as it is. Otherwise they run once the infra container
// is made (apply).
func (ap *podApplication) runInitsFirst(ctx context.Context) (initializing bool, err error) {
	if len(ap.m.InitContainers) == 0 || ap.infra.Action != ActionNone || ap.infra.Current == nil || ap.infra.Current.State != hruntime.StateRunning {
		return false, nil
	}
	ap.infraID = ap.infra.Current.ID
	return ap.runInits(ctx)
}

// createsApp reports whether the apply creates an app container.
func (ap *podApplication) createsApp() bool {
	for _, c := range ap.m.Containers {
		if creates(ap.apps[c.Name].Action) {
			return true
		}
	}
	return false
}

// runInit moves init container j's run gen on, removing the slot's other
// containers (earlier runs) first: it starts the container, or starts
// again one whose failure was reported; done once it exited 0.
func (ap *podApplication) runInit(ctx context.Context, j int, gen string) (done bool, err error) {
	name := ap.m.InitContainers[j].Name
	cur, stale := initRun(ap.pp.Current, podspec.InitSlot(name), gen)
	if cur != nil && rerun(*cur, ap.retries(cur.ID)) {
		stale, cur = append(stale, *cur), nil
	}
	for i := range stale {
		if err := ap.stopRemove(ctx, &stale[i], ap.grace); err != nil {
			return false, inStep(errStepRemove, fmt.Errorf("init container %s: remove an earlier run: %w", name, err))
		}
	}
	var id string
	switch {
	case cur == nil:
		if id, err = ap.startInit(ctx, j, gen); err != nil {
			return false, err
		}
	case cur.State == hruntime.StateCreated:
		// Created, not started: a kill between the two.
		id = cur.ID
		if err := ap.rt.Start(ctx, id); err != nil {
			return false, inStep(errStepStart, fmt.Errorf("init container %s: %w", name, err))
		}
	case cur.State == hruntime.StateExited:
		return ap.initExited(name, cur.ID, cur.ExitCode)
	default:
		id = cur.ID
	}
	if ap.opts.WaitInit == nil {
		return false, nil
	}
	deadline := manifest.Seconds(ap.m.WithDefaults().ProgressDeadlineSeconds)
	wctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	code, err := ap.opts.WaitInit.Wait(wctx, id)
	if err != nil {
		return false, inStep(errStepInit, fmt.Errorf("init container %s did not finish within the pod's progress deadline (%s): %w", name, deadline, err))
	}
	return ap.initExited(name, id, code)
}

// retries reports whether init container id of the current run, failed,
// is to be run again: once its failure was reported, or at once in
// hostlet run --once. As in Kubernetes, a pod that restarts nothing
// (restartPolicy Never) fails for good: only a new version of it runs
// them again.
func (ap *podApplication) retries(id string) bool {
	if ap.m.RestartPolicy == manifest.RestartNever {
		return false
	}
	return ap.opts.WaitInit != nil || ap.opts.Inits.again(ap.m.ID, id)
}

// rerun reports whether init container c of the current run is to be
// removed and run anew: it failed and retry says to try again (its
// failure was reported, or hostlet run --once tries again each time), or
// it is in a state no sync moves on (paused, dead).
func rerun(c hruntime.Container, retry bool) bool {
	switch c.State {
	case hruntime.StateExited:
		return c.ExitCode != 0 && retry
	case hruntime.StateCreated, hruntime.StateRunning, hruntime.StateRestarting:
		return false
	}
	return true
}

// initExited is the outcome of init container name (id) having exited
// with code: done, or the pod's failure (remembered: the next apply runs
// it again).
func (ap *podApplication) initExited(name, id string, code int) (bool, error) {
	if code == 0 {
		return true, nil
	}
	ap.opts.Inits.failed(ap.m.ID, id)
	then := "run again after the pod's backoff"
	if ap.m.RestartPolicy == manifest.RestartNever {
		then = "restartPolicy Never: not run again until the pod changes"
	}
	return false, inStep(errStepInit, fmt.Errorf("init container %s exited with code %d (%s)", name, code, then))
}

// startInit creates and starts init container j for run gen, bound to
// the pod's files, host paths and data folders as an app container is.
func (ap *podApplication) startInit(ctx context.Context, j int, gen string) (string, error) {
	name := ap.m.InitContainers[j].Name
	one := podspec.InitPod(*ap.pod, j).Manifest
	spec := podspec.Init(ap.opts.Instance, *ap.pod, j, ap.infraID, gen, ap.opts.EnvHasher)
	// The fields first: a secret's plaintext is never read for tokens.
	if err := ap.resolveFields(ctx, &spec); err != nil {
		return "", inStep(errStepCreate, fmt.Errorf("init container %s: %w", name, err))
	}
	if err := ap.revealEnv(&spec); err != nil {
		return "", inStep(errStepSecrets, fmt.Errorf("init container %s: %w", name, err))
	}
	if err := podspec.ResolveHostPaths(&spec, one, 0, ap.opts.HostPaths); err != nil {
		return "", inStep(errStepHostPath, fmt.Errorf("init container %s: %w", name, err))
	}
	if err := podspec.BindFiles(&spec, one, 0, ap.copies); err != nil {
		return "", inStep(errStepFiles, fmt.Errorf("init container %s: %w", name, err))
	}
	if err := podspec.BindDataFolders(&spec, one, 0, ap.ensureDataFolder); err != nil {
		return "", inStep(errStepFiles, fmt.Errorf("init container %s: %w", name, err))
	}
	id, err := ap.createStart(ctx, spec)
	if err != nil {
		return "", inStep(errStepCreate, fmt.Errorf("init container %s: %w", name, err))
	}
	ap.applied(Change{Container: podspec.InitSlot(name), Action: ActionCreate,
		Reasons: []string{fmt.Sprintf("init container %d of %d", j+1, len(ap.m.InitContainers))}})
	return id, nil
}

// initRun finds, among a pod's listed containers, the one of init slot
// slot for run gen (the newest, if several) and the slot's others.
func initRun(listed []hruntime.Container, slot, gen string) (cur *hruntime.Container, others []hruntime.Container) {
	for i := range listed {
		c := listed[i]
		switch {
		case c.Slot() != slot:
		case c.Hash() == gen && (cur == nil || slotsOver(c, *cur)):
			if cur != nil {
				others = append(others, *cur)
			}
			cur = &c
		default:
			others = append(others, c)
		}
	}
	return cur, others
}
