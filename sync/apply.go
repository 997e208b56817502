package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/validate"
)

// Lister lists this instance's managed containers in one engine call.
type Lister interface {
	List(ctx context.Context) ([]hruntime.Container, error)
}

// Engine is what applying a plan needs from the container runtime.
type Engine interface {
	Lister
	Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error)
	Start(ctx context.Context, id string) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Remove(ctx context.Context, id string) error
}

// ImageEnsurer makes an image present per a pull policy.
type ImageEnsurer interface {
	EnsureImage(ctx context.Context, ref, pullPolicy string) error
}

// Volumes manages the Docker volumes behind pods' empty-dir volumes.
type Volumes interface {
	EnsureVolume(ctx context.Context, name string, labels map[string]string) error
	RemoveVolume(ctx context.Context, name string) error
	ListVolumes(ctx context.Context) ([]string, error)
}

// Runtime is everything the reconciler uses of the engine.
type Runtime interface {
	Engine
	ImageEnsurer
	Volumes
}

// ApplyOptions configure Apply.
type ApplyOptions struct {
	Instance   string
	InfraImage string
	// InfraCommand overrides the infra image's entrypoint; nil keeps it.
	InfraCommand []string
	Concurrency  int
	// Skip names pods not to touch this time (backing off after a failure).
	Skip func(id string) bool
	// Images, when set, decides whether an image can be used now without
	// waiting for a pull: pulling means a pull runs outside Apply and the
	// pod is left as it is this time (Result.Pulling). When nil, Apply
	// pulls what it needs itself (EnsureImage) and waits.
	Images func(ctx context.Context, ref, pullPolicy string) (pulling bool, err error)
	// HostPaths are the host's hostPath rules: every host path is resolved
	// and checked again right before its container is created, and the
	// resolved path is what is mounted.
	HostPaths validate.Options
	// EnvHasher hashes env values for the io.hostlet.spec label.
	EnvHasher *EnvHasher
}

// DefaultStopTimeout applies to containers of pods that are no longer
// desired (their manifest, and so their grace period, is gone): the engine
// then uses the grace period recorded when the container was created.
const DefaultStopTimeout = -1

// Reasons a pod fails, as status and events report them.
const (
	ReasonPull   = "ErrImagePull"
	ReasonCreate = "CreateContainerError"
	ReasonStart  = "StartError"
	ReasonRemove = "RemoveError"
	// ReasonPulling marks a Pending pod whose image is being pulled.
	ReasonPulling = "Pulling"
)

// PodError is why applying a pod failed: a short reason and the engine's
// message.
type PodError struct {
	Reason string
	Err    error
}

func (e *PodError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *PodError) Unwrap() error { return e.Err }

// Result is what applying one pod did.
type Result struct {
	ID   string
	Plan PodPlan
	// Applied lists the changes carried out, in order.
	Applied []Change
	// Err is nil, or a *PodError.
	Err error
	// Pulling lists the images being pulled outside Apply: the pod was
	// left untouched (the running version keeps running) until they are
	// present.
	Pulling []string
}

// Apply carries out every pod plan that changes something, removals first
// (so a host port freed by one pod can be taken by another), each phase
// with at most opts.Concurrency pods at once. A failing pod never stops the
// others.
func Apply(ctx context.Context, rt Runtime, plan Plan, opts ApplyOptions, log *slog.Logger) []Result {
	var removes, others []PodPlan
	for _, pp := range plan.Pods {
		if pp.Unchanged() || (opts.Skip != nil && opts.Skip(pp.ID)) {
			continue
		}
		if pp.Remove() {
			removes = append(removes, pp)
		} else {
			others = append(others, pp)
		}
	}
	a := &applier{rt: rt, opts: opts, log: log}
	results := a.run(ctx, removes, a.removePod)
	return append(results, a.run(ctx, others, a.applyPod)...)
}

type applier struct {
	rt   Runtime
	opts ApplyOptions
	log  *slog.Logger
}

func (a *applier) run(ctx context.Context, pods []PodPlan, fn func(context.Context, PodPlan) Result) []Result {
	results := make([]Result, len(pods))
	n := max(a.opts.Concurrency, 1)
	sem := make(chan struct{}, n)
	var wg gosync.WaitGroup
	for i, pp := range pods {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = fn(ctx, pp)
		}()
	}
	wg.Wait()
	return results
}

// removePod stops and removes every container of the pod, app containers
// first, then its empty-dir volumes.
func (a *applier) removePod(ctx context.Context, pp PodPlan) Result {
	res := Result{ID: pp.ID, Plan: pp}
	for _, ch := range pp.Changes {
		if err := a.stopRemove(ctx, ch.Current, DefaultStopTimeout); err != nil {
			res.Err = &PodError{Reason: ReasonRemove, Err: err}
			return res
		}
		res.Applied = append(res.Applied, ch)
	}
	if err := a.pruneVolumes(ctx, pp.ID, nil); err != nil {
		res.Err = &PodError{Reason: ReasonRemove, Err: err}
	}
	return res
}

func (a *applier) stopRemove(ctx context.Context, c *hruntime.Container, timeout time.Duration) error {
	if c == nil {
		return nil
	}
	if c.Running() {
		if err := a.rt.Stop(ctx, c.ID, timeout); err != nil && !hruntime.IsNotFound(err) {
			return err
		}
	}
	return a.rt.Remove(ctx, c.ID)
}

// applyPod brings one desired pod in line with its plan: pull what is
// needed first (a failed pull leaves the running version alone), then take
// down what is replaced, then create and start.
func (a *applier) applyPod(ctx context.Context, pp PodPlan) Result {
	res := Result{ID: pp.ID, Plan: pp}
	p := pp.Desired
	m := p.Manifest
	grace := time.Duration(m.TerminationGracePeriodSeconds) * time.Second
	fail := func(reason string, err error) Result {
		res.Err = &PodError{Reason: reason, Err: err}
		return res
	}

	var infra Change
	apps := map[string]Change{}
	for _, ch := range pp.Changes {
		if ch.Container == hruntime.InfraName {
			infra = ch
		} else {
			apps[ch.Container] = ch
		}
	}

	// 0. Host paths, before anything is pulled or stopped.
	if err := checkHostPaths(m, a.opts.HostPaths); err != nil {
		return fail(ReasonHostPath, err)
	}

	// 1. Images, before anything is stopped. While one is being pulled
	// the pod waits as it is.
	for _, c := range m.Containers {
		if ch := apps[c.Name]; ch.Action == ActionCreate || ch.Action == ActionRecreate {
			if err := a.image(ctx, &res, c.Image, c.ImagePullPolicy); err != nil {
				return fail(ReasonPull, fmt.Errorf("container %s: %w", c.Name, err))
			}
		}
	}
	if infra.Action == ActionCreate || infra.Action == ActionRecreate {
		if err := a.image(ctx, &res, a.opts.InfraImage, manifest.PullIfNotPresent); err != nil {
			return fail(ReasonPull, fmt.Errorf("infra image: %w", err))
		}
	}
	if len(res.Pulling) > 0 {
		return res
	}

	// 2. Take down replaced and removed app containers, then the infra.
	for _, ch := range pp.Changes {
		if ch.Container == hruntime.InfraName || (ch.Action != ActionRecreate && ch.Action != ActionRemove) {
			continue
		}
		if err := a.stopRemove(ctx, ch.Current, grace); err != nil {
			return fail(ReasonRemove, err)
		}
		if ch.Action == ActionRemove {
			res.Applied = append(res.Applied, ch)
		}
	}
	if infra.Action == ActionRecreate || infra.Action == ActionRemove {
		if err := a.stopRemove(ctx, infra.Current, grace); err != nil {
			return fail(ReasonRemove, err)
		}
		if infra.Action == ActionRemove {
			res.Applied = append(res.Applied, infra)
		}
	}

	// 3. Volumes; the containers of a plan that only restarts containers
	// have theirs.
	restartsOnly := true
	for _, ch := range pp.Changes {
		if ch.Action != ActionNone && ch.Action != ActionRestart {
			restartsOnly = false
		}
	}
	for _, v := range m.Volumes {
		if v.HostPath != "" || restartsOnly {
			continue
		}
		labels := map[string]string{
			hruntime.LabelManaged: "true", hruntime.LabelInstance: a.opts.Instance,
			hruntime.LabelPod: m.ID, hruntime.LabelVolume: v.Name,
		}
		if err := a.rt.EnsureVolume(ctx, volumeName(a.opts.Instance, m.ID, v.Name), labels); err != nil {
			return fail(ReasonCreate, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}

	// 4. The infra container.
	infraID := ""
	if infra.Current != nil && infra.Action != ActionRecreate && infra.Action != ActionRemove {
		infraID = infra.Current.ID
	}
	switch infra.Action {
	case ActionCreate, ActionRecreate:
		id, err := a.createStart(ctx, infraSpec(a.opts.Instance, a.opts.InfraImage, a.opts.InfraCommand, *p))
		if err != nil {
			return fail(startReason(err), fmt.Errorf("infra container: %w", err))
		}
		infraID = id
		res.Applied = append(res.Applied, infra)
	case ActionRestart:
		startErr := a.rt.Start(ctx, infraID)
		if startErr == nil {
			res.Applied = append(res.Applied, infra)
			break
		}
		if !hruntime.IsStaleTask(startErr) {
			return fail(ReasonStart, fmt.Errorf("infra container: %w", startErr))
		}
		// A container whose start an engine restart cut ("task already
		// exists", Exited 128) never starts again: create it anew, as
		// kubelet does for every restart. Other start errors (the engine
		// going down, a port taken) are retried with backoff as before. Its app containers
		// share its network namespace, so they are created anew with it.
		a.log.Warn("infra container does not start; creating it anew", "pod", m.ID, "error", startErr)
		for _, c := range m.Containers {
			ch := apps[c.Name]
			if ch.Current == nil || ch.Action == ActionRecreate {
				continue
			}
			if ch.Action == ActionNone && !ch.Current.Running() {
				// Done and not to run again (restartPolicy Never, or
				// OnFailure after success): left as it is, never re-run.
				continue
			}
			if err := a.stopRemove(ctx, ch.Current, grace); err != nil {
				return fail(ReasonRemove, fmt.Errorf("container %s: %w", c.Name, err))
			}
			a.log.Info("removed container to create it anew with its pod's infra container", "pod", m.ID, "container", c.Name)
			apps[c.Name] = Change{Container: c.Name, Action: ActionRecreate, Current: ch.Current,
				Reasons: []string{"pod network: infra container created anew"}}
		}
		if err := a.rt.Remove(ctx, infraID); err != nil && !hruntime.IsNotFound(err) {
			return fail(ReasonStart, fmt.Errorf("infra container: %w (and remove it: %w)", startErr, err))
		}
		id, err := a.createStart(ctx, infraSpec(a.opts.Instance, a.opts.InfraImage, a.opts.InfraCommand, *p))
		if err != nil {
			return fail(startReason(err), fmt.Errorf("infra container (did not start: %v; created anew): %w", startErr, err))
		}
		infraID = id
		res.Applied = append(res.Applied, Change{Container: hruntime.InfraName, Action: ActionRecreate, Current: infra.Current,
			Reasons: []string{fmt.Sprintf("did not start: %v", startErr)}})
	}

	// 5. App containers, in manifest order.
	for i, c := range m.Containers {
		ch := apps[c.Name]
		switch ch.Action {
		case ActionCreate, ActionRecreate:
			spec := appSpec(a.opts.Instance, *p, i, infraID, a.opts.EnvHasher)
			if err := resolveHostPaths(&spec, m, i, a.opts.HostPaths); err != nil {
				return fail(ReasonHostPath, fmt.Errorf("container %s: %w", c.Name, err))
			}
			if _, err := a.createStart(ctx, spec); err != nil {
				return fail(startReason(err), fmt.Errorf("container %s: %w", c.Name, err))
			}
		case ActionRestart:
			if ch.Current.Running() {
				if err := a.rt.Stop(ctx, ch.Current.ID, grace); err != nil {
					return fail(ReasonStart, fmt.Errorf("container %s: %w", c.Name, err))
				}
			}
			startErr := a.rt.Start(ctx, ch.Current.ID)
			if startErr == nil {
				break
			}
			if !hruntime.IsStaleTask(startErr) {
				return fail(ReasonStart, fmt.Errorf("container %s: %w", c.Name, startErr))
			}
			// As for the infra container: one that does not start is
			// created anew.
			a.log.Warn("container does not start; creating it anew", "pod", m.ID, "container", c.Name, "error", startErr)
			if err := a.rt.Remove(ctx, ch.Current.ID); err != nil && !hruntime.IsNotFound(err) {
				return fail(ReasonStart, fmt.Errorf("container %s: %w (and remove it: %w)", c.Name, startErr, err))
			}
			spec := appSpec(a.opts.Instance, *p, i, infraID, a.opts.EnvHasher)
			if err := resolveHostPaths(&spec, m, i, a.opts.HostPaths); err != nil {
				return fail(ReasonHostPath, fmt.Errorf("container %s: %w", c.Name, err))
			}
			if _, err := a.createStart(ctx, spec); err != nil {
				return fail(startReason(err), fmt.Errorf("container %s (did not start: %v; created anew): %w", c.Name, startErr, err))
			}
			ch = Change{Container: c.Name, Action: ActionRecreate, Current: ch.Current,
				Reasons: []string{fmt.Sprintf("did not start: %v", startErr)}}
		default:
			continue
		}
		res.Applied = append(res.Applied, ch)
	}

	// 6. Volumes no longer in the manifest, only when the pod changed (a
	// plan that only restarts containers changes no volume).
	if !restartsOnly {
		keep := map[string]bool{}
		for _, v := range m.Volumes {
			keep[v.Name] = true
		}
		if err := a.pruneVolumes(ctx, m.ID, keep); err != nil {
			a.log.Warn("prune volumes", "pod", m.ID, "error", err)
		}
	}
	return res
}

// image makes ref usable under policy: pulled here when opts.Images is
// nil, else asked of opts.Images, noting in res an image being pulled.
func (a *applier) image(ctx context.Context, res *Result, ref, policy string) error {
	if a.opts.Images == nil {
		return a.rt.EnsureImage(ctx, ref, policy)
	}
	pulling, err := a.opts.Images(ctx, ref, policy)
	if pulling && !slices.Contains(res.Pulling, ref) {
		res.Pulling = append(res.Pulling, ref)
	}
	return err
}

// errStart marks a container that was created but did not start.
var errStart = errors.New("start failed")

func startReason(err error) string {
	if errors.Is(err, errStart) {
		return ReasonStart
	}
	return ReasonCreate
}

func (a *applier) createStart(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	id, err := a.rt.Create(ctx, spec)
	if hruntime.IsConflict(err) {
		// A container of that name is left from an interrupted apply that
		// the list did not show as this slot's; its name is ours.
		if rmErr := a.rt.Remove(ctx, spec.Name); rmErr == nil {
			id, err = a.rt.Create(ctx, spec)
		}
	}
	if err != nil {
		return "", err
	}
	if err := a.rt.Start(ctx, id); err != nil {
		return id, fmt.Errorf("%w: %w", errStart, err)
	}
	return id, nil
}

// pruneVolumes removes the pod's volumes whose names are not in keep (all
// of them when keep is nil).
func (a *applier) pruneVolumes(ctx context.Context, pod string, keep map[string]bool) error {
	names, err := a.rt.ListVolumes(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		vp, vol, ok := parseVolumeName(n)
		if !ok || vp != pod || keep[vol] || volumeName(a.opts.Instance, pod, vol) != n {
			continue
		}
		if err := a.rt.RemoveVolume(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// parseVolumeName splits hostlet_<pod>_<volume>_<sum>. Pod IDs and volume
// names hold no underscores.
func parseVolumeName(n string) (pod, volume string, ok bool) {
	parts := strings.Split(n, "_")
	if len(parts) != 4 || parts[0] != "hostlet" {
		return "", "", false
	}
	return parts[1], parts[2], true
}
