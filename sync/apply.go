package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"time"

	scrub "github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/datafolder"
	"github.com/hostlet/hostlet/sync/podspec"
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
	// NoRestart sets a container's restart policy to none (one kept
	// stopped until its successor has started).
	NoRestart(ctx context.Context, id string) error
	// RestoreRestart sets a container's restart policy back to the
	// spec's (one NoRestart cleared, started again instead).
	RestoreRestart(ctx context.Context, id, policy string) error
}

// ImageEnsurer makes an image present per a pull policy.
type ImageEnsurer interface {
	EnsureImage(ctx context.Context, ref, pullPolicy string) error
	// ImageUser is the user a present image runs as (its USER; "" for
	// root by default).
	ImageUser(ctx context.Context, ref string) (string, error)
}

// Volumes manages the Docker volumes behind pods' empty-dir volumes and
// their named Docker volumes.
type Volumes interface {
	EnsureVolume(ctx context.Context, name string, labels map[string]string) error
	RemoveVolume(ctx context.Context, name string) error
	ListVolumes(ctx context.Context) ([]string, error)
	// CheckVolume is ErrNotFound when the volume is not there.
	CheckVolume(ctx context.Context, name string) error
}

// Networks manages the user-defined networks pods join.
type Networks interface {
	EnsureNetwork(ctx context.Context, n hruntime.NetworkSpec, labels map[string]string) error
	RemoveNetwork(ctx context.Context, name string) error
	ListNetworks(ctx context.Context) ([]string, error)
}

// Namer renames containers and finds who holds a name: for the
// containers whose manifest chooses their name.
type Namer interface {
	Rename(ctx context.Context, id, name string) error
	NameHolder(ctx context.Context, name string) (hruntime.Holder, error)
}

// Runtime is what applying a plan uses of the engine: the union of its
// five roles (no interface of its own).
type Runtime interface {
	Engine
	ImageEnsurer
	Volumes
	Networks
	Namer
}

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// Exec runs lifecycle hooks' commands in containers; nil: the
	// runtime, when it can (else a command hook fails, saying so).
	Exec Execer
	// Inspect tells a container's address (postStart httpGet hooks,
	// status.podIP); nil: the runtime, when it can.
	Inspect    Inspector
	Instance   string
	InfraImage string
	// InfraCommand overrides the infra image's entrypoint; nil keeps it.
	InfraCommand []string
	Concurrency  int
	// Skip names pods not to touch this time (backing off after a failure).
	Skip func(id string) bool
	// Begin, when set, is asked right before a pod is applied (a worker
	// may start it long after the plan was made): false leaves it as it
	// is this time (a hold taken meanwhile). End is told when a pod Begin
	// let through is done.
	Begin func(id string) bool
	End   func(id string)
	// Images, when set, decides whether an image can be used now without
	// waiting for a pull: pulling means a pull runs outside Apply and the
	// pod is left as it is this time (Result.Pulling). When nil, Apply
	// pulls what it needs itself (EnsureImage) and waits.
	Images func(ctx context.Context, ref, pullPolicy string) (pulling bool, err error)
	// Builds decides whether the image of a container with a build (its
	// Image the name of the build's inputs) can be used now: building
	// means a build runs outside Apply and the pod is left as it is this
	// time (Result.Building). When nil, such a container fails.
	Builds func(ctx context.Context, pod string, c manifest.Container) (building bool, err error)
	// HostPaths are the host's hostPath rules: every host path is resolved
	// and checked again right before its container is created, and the
	// resolved path is what is mounted.
	HostPaths validate.Options
	// EnvHasher hashes env values for the io.hostlet.spec label.
	EnvHasher *EnvHasher
	// Files writes the files volumes of the containers to be created
	// where Docker can bind-mount them; nil fails every pod that has one.
	Files FileWriter
	// Secrets decrypts the encrypted files of a pod being applied, and
	// SecretFiles writes the files volumes holding their plaintext (on a
	// tmpfs); nil fails every pod that has one.
	Secrets     SecretRevealer
	SecretFiles FileWriter
	// DataFolders makes the pods' data folders; nil: a pod with one
	// fails.
	DataFolders *datafolder.Store
	// VolumeOwners finds the volumes' files on the host for a pod's
	// fsGroup; nil: the runtime, when it can (else a pod with an fsGroup
	// fails, saying so).
	VolumeOwners VolumeOwners
	// FSGroupMaxEntries bounds the files and folders of one volume a
	// pod's fsGroup change walks (0: fsgroup.DefaultMaxEntries).
	FSGroupMaxEntries int
	// Inits remembers the init containers whose failure was reported, so
	// that their pod's next apply runs them again (nil: none is run
	// again). WaitInit, when set, waits for each init container to exit
	// (hostlet run --once); nil leaves the pod initializing while one
	// runs (Result.Initializing).
	Inits    *InitRuns
	WaitInit InitWaiter
	// HostAddress tells the host's address (an env var's status.hostIP);
	// nil: the source address of the default route.
	HostAddress HostAddresser
	// SweepNetworks removes every network of this instance that no pod
	// of the plan uses (once the sources have delivered, after a start:
	// a network left by a hostlet killed before it removed it). Without
	// it only the networks of the containers the plan takes down are
	// looked at.
	SweepNetworks bool
	// PolicyCleared, when set, is told (from any of the apply's workers)
	// the ID of each container whose restart policy the apply cleared
	// before stopping it: wanted again while it stays, stopped, it runs
	// again (PlanOptions.PolicyCleared).
	PolicyCleared PolicyClearedNoter
}

// PolicyClearedNoter is told the IDs of the containers an apply left with
// their restart policy cleared; safe for concurrent use.
type PolicyClearedNoter interface {
	NotePolicyCleared(id string)
}

// FileWriter writes a files volume's content (once per digest) and returns
// the host path to bind-mount.
type FileWriter interface {
	Materialise(ctx context.Context, name string, f *manifest.Files) (string, error)
}

// DefaultStopTimeout applies to containers of pods that are no longer
// desired (their manifest, and so their grace period, is gone): the engine
// then uses the grace period recorded when the container was created.
const DefaultStopTimeout = -1

// Reasons a pod fails, as status and events report them. failureReason
// derives them from the classes of the error.
const (
	// ReasonPull: an image could not be pulled, or is absent under
	// imagePullPolicy Never.
	ReasonPull = "ErrImagePull"
	// ReasonCreate: a container or volume could not be created.
	ReasonCreate = "CreateContainerError"
	// ReasonStart: a container could not be started (or stopped, to be
	// restarted).
	ReasonStart = "StartError"
	// ReasonRemove: a container or volume could not be removed.
	ReasonRemove = "RemoveError"
	// ReasonUnavailable: the engine could not be reached, whatever the
	// step (an image presence check included).
	ReasonUnavailable = "EngineUnavailable"
	// ReasonPulling marks a Pending pod whose image is being pulled.
	ReasonPulling = "Pulling"
	// ReasonFiles: the files a container mounts could not be written
	// under stateDir (a full disk); nothing of the pod was stopped.
	ReasonFiles = "FilesNotWritten"
)

// PodError is why applying a pod failed: a short reason and the engine's
// message.
type PodError struct {
	// Reason is derived from Err's classes (failureReason).
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
	// Building lists the images being built outside Apply, as Pulling.
	Building []string
	// Initializing says which init container runs ("" when none): the
	// apply stopped before the app containers, which its next sync
	// creates once the init containers are through.
	Initializing string
	// TookDown: a container of the pod's running version was stopped or
	// removed (the old version is no longer intact), even if what
	// followed failed.
	TookDown bool
	// skipped: Begin refused the pod; it is left out of Apply's results.
	skipped bool
}

// waiting reports whether the pod was left untouched, its images being
// pulled or built, and nothing failed.
func (r Result) waiting() bool {
	return len(r.Pulling)+len(r.Building) > 0 && r.Err == nil
}

// Apply carries out every pod plan that changes something, removals first
// (so a host port freed by one pod can be taken by another), each phase
// with at most opts.Concurrency pods at once. A failing pod never stops the
// others. The containers a recreate replaces are only stopped before their
// successors start; they are removed after every pod of the pass has been
// applied (removeLate), off the path to the new ones answering.
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
	a := &applier{rt: rt, opts: opts, log: log, plan: plan, inPass: map[string]bool{}}
	a.ex = opts.Exec
	if a.ex == nil {
		a.ex, _ = rt.(Execer)
	}
	a.in = opts.Inspect
	if a.in == nil {
		a.in, _ = rt.(Inspector)
	}
	for _, pp := range slices.Concat(removes, others) {
		a.inPass[pp.ID] = true
	}
	results := a.run(ctx, removes, a.removePod)
	results = append(results, a.run(ctx, others, a.applyPod)...)
	a.removeLate(ctx)
	a.pruneNetworks(ctx, plan, results)
	return results
}

// pruneNetworks removes the networks hostlet made that no pod uses any
// more: those of the namespace holders this apply took down (their
// io.hostlet.networks label), or with opts.SweepNetworks every one of
// this instance. Used are the networks of every desired pod and of every
// container left in place (a pod skipped this time keeps its old
// version, on its old networks). One still in use (a container whose
// removal failed) is left for a later sync; failures are only logged.
func (a *applier) pruneNetworks(ctx context.Context, plan Plan, results []Result) {
	used := map[string]bool{}
	takenDown := map[string]bool{}
	var candidates []string
	for _, r := range results {
		for _, ch := range r.Applied {
			if ch.Current != nil && replaces(ch.Action) {
				takenDown[ch.Current.ID] = true
				if l := ch.Current.Labels[LabelNetworks]; l != "" {
					candidates = append(candidates, strings.Split(l, ",")...)
				}
			}
		}
	}
	for _, pp := range plan.Pods {
		if pp.Desired != nil {
			for _, n := range pp.Desired.Manifest.Networks {
				used[n.Name] = true
			}
		}
		for _, ch := range pp.Changes {
			if ch.Current != nil && !takenDown[ch.Current.ID] && ch.Current.Labels[LabelNetworks] != "" {
				for _, n := range strings.Split(ch.Current.Labels[LabelNetworks], ",") {
					used[n] = true
				}
			}
		}
	}
	if a.opts.SweepNetworks {
		names, err := a.rt.ListNetworks(ctx)
		if err != nil {
			a.log.Warn("list networks", "error", err)
		}
		candidates = append(candidates, names...)
	}
	slices.Sort(candidates)
	for _, n := range slices.Compact(candidates) {
		if used[n] {
			continue
		}
		if err := a.rt.RemoveNetwork(ctx, n); err != nil {
			a.log.Info("network not removed yet", "network", n, "error", err)
		}
	}
}

type applier struct {
	rt   Runtime
	opts ApplyOptions
	log  *slog.Logger
	plan Plan
	// ex runs lifecycle hooks' commands (nil: an engine without exec).
	ex Execer
	// in tells containers' addresses (nil: an engine that does not).
	in Inspector
	// claims maps each container name the desired pods choose to the pod
	// choosing it: made on first use (a sync that names nothing makes
	// none).
	claims     map[string]string
	claimsOnce gosync.Once
	// joiners maps the ID of a listed container holding a pod's network
	// to the listed containers of other pods (networkOf) that joined it:
	// made once, read by every pod's worker.
	joiners     map[string][]hruntime.Container
	joinersOnce gosync.Once
	// inPass are the pods this Apply applies or removes (each worker
	// holds its pod's Begin).
	inPass map[string]bool
	// late are the pods whose replaced containers were only stopped, to
	// be removed once every pod of the pass has been applied (removeLate).
	late   []*podApplication
	lateMu gosync.Mutex
	// networks are the networks this pass made sure of, by their
	// settings (networkKey): the pods of a Compose project share one,
	// looked up once a pass, not once a pod.
	networks   map[string]bool
	networksMu gosync.Mutex
	// volumes are this instance's volumes as listed once a pass
	// (listVolumes), for the pods whose volumes are pruned.
	volumes   []string
	volumesMu gosync.Mutex
	// present are the images this pass found present (imagePresent).
	present   map[string]bool
	presentMu gosync.Mutex
}

// dropJoiners stops and removes the containers that joined the network
// namespace of container holder (pods with networkOf), before the holder
// goes: their network goes with it either way, Podman refuses to remove a
// container others joined, and the joining pod, waiting for the holder's
// pod while it changes, is created anew into the next one. A held joiner
// (asked now, as for a pod about to be applied: Begin) is left as it is;
// a joiner removed meanwhile (its pod pruned) is no error.
func (a *applier) dropJoiners(ctx context.Context, holder string) error {
	a.joinersOnce.Do(func() { a.joiners = joinersByHolder(a.plan) })
	for _, j := range a.joiners[holder] {
		pod := j.Pod()
		if own := !a.inPass[pod] && a.opts.Begin != nil; own {
			if !a.opts.Begin(pod) {
				a.log.Info("left the container of a held pod whose network goes", "pod", pod, "container", j.Slot())
				continue
			}
			if a.opts.End != nil {
				defer a.opts.End(pod)
			}
		}
		if err := a.stopRemoveJoiner(ctx, j); err != nil {
			return err
		}
		a.log.Info("removed a container whose network goes: its pod joins the next one", "pod", pod, "container", j.Slot(), "holder", holder)
	}
	return nil
}

func (a *applier) stopRemoveJoiner(ctx context.Context, j hruntime.Container) error {
	if j.Running() {
		if err := a.stop(ctx, &j, DefaultStopTimeout); err != nil && !hruntime.IsNotFound(err) {
			return fmt.Errorf("container %s of pod %s, which joined its network: %w", j.Slot(), j.Pod(), err)
		}
	}
	if err := a.rt.Remove(ctx, j.ID); err != nil && !hruntime.IsNotFound(err) {
		return fmt.Errorf("container %s of pod %s, which joined its network: %w", j.Slot(), j.Pod(), err)
	}
	return nil
}

// joinersByHolder maps each holder's ID to the plan's listed containers
// labelled as having joined it: of pods with networkOf, whose label is
// hostlet's own (an image's label of that name, on a pod of its own
// network, is not taken), or of pods no longer desired.
func joinersByHolder(plan Plan) map[string][]hruntime.Container {
	out := map[string][]hruntime.Container{}
	for _, pp := range plan.Pods {
		if pp.Desired != nil && pp.Desired.Manifest.NetworkOf == "" {
			continue
		}
		for _, c := range pp.Current {
			if h := c.Labels[podspec.LabelNetworkOf]; h != "" {
				out[h] = append(out[h], c)
			}
		}
	}
	return out
}

// claimOf is the desired pod that chooses the container name name, or "".
func (a *applier) claimOf(name string) string {
	a.claimsOnce.Do(func() { a.claims = chosenNames(a.plan) })
	return a.claims[name]
}

// chosenNames maps each container name the plan's desired pods choose to
// the pod choosing it.
func chosenNames(plan Plan) map[string]string {
	claims := map[string]string{}
	for _, pp := range plan.Pods {
		if pp.Desired == nil {
			continue
		}
		for _, c := range pp.Desired.Manifest.Containers {
			if c.ContainerName != "" {
				claims[c.ContainerName] = pp.ID
			}
		}
	}
	return claims
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
			if a.opts.Begin != nil {
				if !a.opts.Begin(pp.ID) {
					results[i] = Result{ID: pp.ID, Plan: pp, skipped: true}
					return
				}
				if a.opts.End != nil {
					defer a.opts.End(pp.ID)
				}
			}
			results[i] = fn(ctx, pp)
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(results, func(r Result) bool { return r.skipped })
}

// removePod stops and removes every container of the pod, app containers
// first, then its empty-dir volumes.
func (a *applier) removePod(ctx context.Context, pp PodPlan) Result {
	res := Result{ID: pp.ID, Plan: pp}
	for _, ch := range pp.Changes {
		if err := a.stopRemove(ctx, ch.Current, DefaultStopTimeout); err != nil {
			res.Err = podError(inStep(errStepRemove, err))
			return res
		}
		res.Applied = append(res.Applied, ch)
	}
	if err := a.pruneVolumes(ctx, pp.ID, nil); err != nil {
		res.Err = podError(inStep(errStepRemove, err))
	}
	return res
}

// stopRemove stops container c and removes it.
func (a *applier) stopRemove(ctx context.Context, c *hruntime.Container, timeout time.Duration) error {
	if c == nil {
		return nil
	}
	if err := a.dropJoiners(ctx, c.ID); err != nil {
		return err
	}
	if c.Running() {
		if err := a.stop(ctx, c, timeout); err != nil && !hruntime.IsNotFound(err) {
			return err
		}
	}
	return a.rt.Remove(ctx, c.ID)
}

// stop stops running container c within grace, its preStop hook (if it
// has one) first. One of restartPolicy OnFailure (stopsWithoutPolicy)
// has its restart policy cleared before: its app's exit 0 on SIGTERM,
// with its policy on-failure still, would pass for a completion to a
// hostlet killed or stopped before it was removed or started again, and
// it would never run again (see policyMarks). Where the
// engine refuses the stop, it runs on, with its policy back; else it is
// marked (ApplyOptions.PolicyCleared).
func (a *applier) stop(ctx context.Context, c *hruntime.Container, grace time.Duration) error {
	cleared := stopsWithoutPolicy(*c) && a.rt.NoRestart(ctx, c.ID) == nil
	ip := c.IP
	if ip == "" && c.Labels[podspec.LabelPreStop] != "" {
		// Its pod's infra container holds the address.
		ip = infraIP(a.plan, c.Pod())
	}
	err := a.rt.Stop(ctx, c.ID, preStop(ctx, a.ex, c, ip, grace, a.log))
	if cleared {
		a.clearedByStop(ctx, c.ID, err)
	}
	return err
}

// clearedByStop follows the stop (its error: stopErr) of container id
// whose restart policy, on-failure, was cleared first: where the engine
// refused the stop (hostlet running on) and takes the policy back, it
// runs on as it was; else it is marked.
func (a *applier) clearedByStop(ctx context.Context, id string, stopErr error) {
	if stopErr != nil && ctx.Err() == nil && !hruntime.IsNotFound(stopErr) &&
		a.rt.RestoreRestart(ctx, id, hruntime.RestartOnFailure) == nil {
		return
	}
	a.notePolicyCleared(id)
}

// notePolicyCleared tells opts.PolicyCleared that container id's restart
// policy was cleared.
func (a *applier) notePolicyCleared(id string) {
	if a.opts.PolicyCleared != nil {
		a.opts.PolicyCleared.NotePolicyCleared(id)
	}
}

// stopsWithoutPolicy reports whether app container c has its restart
// policy cleared before hostlet stops it (stop): one of restartPolicy
// OnFailure, as its spec label records.
func stopsWithoutPolicy(c hruntime.Container) bool {
	created, _ := createdPolicy(c)
	return created == manifest.RestartOnFailure
}

// postStart runs app container i's postStart hook, if any, in container
// id (just started): one that fails stops it again, and the apply fails.
func (ap *podApplication) postStart(ctx context.Context, i int, id string) error {
	l := ap.m.Containers[i].Lifecycle
	if l == nil || l.PostStart == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, MaxPostStartTime)
	defer cancel()
	err := ap.runPostStart(hctx, id, *l.PostStart, ap.m.Containers[i].Ports)
	if err == nil {
		return nil
	}
	// Of restartPolicy OnFailure, its policy goes first, as in stop: its
	// exit 0 on SIGTERM must not pass for a completion.
	cleared := ap.m.RestartPolicy == manifest.RestartOnFailure && ap.rt.NoRestart(ctx, id) == nil
	serr := ap.rt.Stop(ctx, id, ap.grace)
	if cleared {
		ap.clearedByStop(ctx, id, serr)
	}
	if serr != nil && !hruntime.IsNotFound(serr) {
		ap.log.Warn("stop a container whose postStart hook failed", "pod", ap.m.ID, "container", ap.m.Containers[i].Name, "error", serr)
	}
	return inStep(errStepStart, fmt.Errorf("container %s: postStart hook failed: %w", ap.m.Containers[i].Name, err))
}

// applyPod brings one desired pod in line with its plan: pull what is
// needed first (a failed pull leaves the running version alone), then take
// down what is replaced, then create and start.
func (a *applier) applyPod(ctx context.Context, pp PodPlan) Result {
	ap := a.newPodApplication(pp)
	defer a.noteLate(ap)
	if err := ap.apply(ctx); err != nil {
		// The engine may quote a value of the spec (a log driver's
		// address with its credentials, a user interpolated from .env):
		// never into status or events.
		ap.res.Err = scrub.NewHider(ap.pod.Hidden...).Error(scrub.Values(podError(err), append(secretValues(ap.m), ap.revealedValues()...)...))
	}
	return ap.res
}

// secretValues are the values of m an error must not show: env values
// and log options' values.
func secretValues(m manifest.Manifest) []string {
	var out []string
	for _, c := range slices.Concat(m.Containers, m.InitContainers) {
		for _, e := range c.Env {
			out = append(out, e.Value)
		}
		if c.Logging != nil {
			for _, v := range c.Logging.Options {
				out = append(out, v)
			}
		}
		if c.Build != nil {
			out = append(out, buildSecrets(c)...)
		}
	}
	return out
}

// podApplication is one pod being applied: its plan, split into the infra
// container's change and the app containers' changes by name, and what has
// been done so far.
type podApplication struct {
	*applier
	pp    PodPlan
	pod   *Pod
	m     manifest.Manifest
	grace time.Duration
	infra Change
	// infraAt is the index of infra in pp.Changes; -1 when the plan has
	// no infra container.
	infraAt int
	apps    map[string]Change
	// infraID is the pod's infra container once it runs ("" for none).
	infraID string
	// copies are the paths of the pod's files volumes by digest
	// (writeFiles).
	copies map[string]string
	// secrets are the plaintexts of the pod's secrets by token
	// (revealSecrets), in memory only.
	secrets map[string][]byte
	// late are the replaced containers stopped and not yet removed, in
	// the order they go (app containers, then the infra container).
	late []hruntime.Container
	// pruneOld: the apply went through; the volumes the manifest no
	// longer has go once late is removed.
	pruneOld bool
	// initsDone: the init containers are through for this apply.
	initsDone bool
	// fields are the values of the pod's fields (fieldValue) asked for
	// so far in this apply.
	fields map[string]string
	res    Result
}

func (a *applier) newPodApplication(pp PodPlan) *podApplication {
	ap := &podApplication{
		applier: a, pp: pp, pod: pp.Desired, m: pp.Desired.Manifest,
		grace: manifest.Seconds(pp.Desired.Manifest.TerminationGracePeriodSeconds),
		apps:  map[string]Change{}, infraAt: -1, res: Result{ID: pp.ID, Plan: pp},
	}
	if ap.m.NetworkOf != "" {
		// The other pod's container is this one's "infra": its network
		// namespace is joined (a pod of one container has none of its own).
		ap.infraID = pp.joinID
	}
	// A slot's own change comes first; a later change of the same slot
	// removes a duplicate container (takeDown) and must not replace it.
	for i, ch := range pp.Changes {
		switch _, seen := ap.apps[ch.Container]; {
		case ch.Container == hruntime.InfraName && ap.infraAt < 0:
			ap.infra, ap.infraAt = ch, i
		case ch.Container != hruntime.InfraName && !seen:
			ap.apps[ch.Container] = ch
		}
	}
	return ap
}

// The steps of applying a pod, as error classes: every error a step
// returns is tagged with its step (inStep), its text unchanged.
var (
	errStepHostPath = errors.New("host path check")
	errStepFiles    = errors.New("files write")
	errStepPull     = errors.New("image pull")
	errStepRemove   = errors.New("container removal")
	errStepCreate   = errors.New("container creation")
	errStepStart    = errors.New("container start")
)

// stepError is an error tagged with the step it happened in. Its text is
// the error's; errors.Is matches both the step and the error's classes.
type stepError struct {
	step error
	err  error
}

func (e *stepError) Error() string   { return e.err.Error() }
func (e *stepError) Unwrap() []error { return []error{e.step, e.err} }

// inStep tags err (not nil) with step.
func inStep(step, err error) error { return &stepError{step: step, err: err} }

// podError is the PodError of err, its reason derived from err's classes.
func podError(err error) *PodError {
	return &PodError{Reason: failureReason(err), Err: err}
}

// failureReason derives the reason a pod failed from the classes of err.
// The runtime's classes come first: an image the runtime could not pull
// (or may not pull) is ErrImagePull, and an engine that cannot be reached
// is EngineUnavailable at any other step, an image presence check included.
// Otherwise the step that failed says it; a container created but not
// started (errStart) is a StartError.
func failureReason(err error) string {
	switch {
	case errors.Is(err, hruntime.ErrBuild):
		return ReasonBuild
	case errors.Is(err, hruntime.ErrImagePull), errors.Is(err, hruntime.ErrImageNeverPull):
		return ReasonPull
	case errors.Is(err, hruntime.ErrUnavailable):
		return ReasonUnavailable
	case errors.Is(err, errStepHostPath):
		return ReasonHostPath
	case errors.Is(err, errStepFiles):
		return ReasonFiles
	case errors.Is(err, errStepFSGroup):
		return ReasonFSGroup
	case errors.Is(err, errStepSecrets):
		return ReasonSecret
	case errors.Is(err, errStart), errors.Is(err, errStepStart):
		return ReasonStart
	case errors.Is(err, errStepCreate):
		return ReasonCreate
	case errors.Is(err, errStepRemove):
		return ReasonRemove
	case errors.Is(err, errStepPull):
		return ReasonPull
	case errors.Is(err, errStepInit):
		return ReasonInitFailed
	}
	return "Error"
}

// applied notes a change carried out.
func (ap *podApplication) applied(ch Change) {
	ap.res.Applied = append(ap.res.Applied, ch)
}

// apply runs the steps in order; the first that fails ends it.
func (ap *podApplication) apply(ctx context.Context) error {
	// Secrets first: a file this host cannot decrypt stops nothing.
	if err := ap.revealSecrets(ctx); err != nil {
		return inStep(errStepSecrets, err)
	}
	// Host paths, before anything is pulled or stopped.
	if err := podspec.CheckHostPaths(ap.m, ap.opts.HostPaths); err != nil {
		return inStep(errStepHostPath, err)
	}
	// Files too: a disk too full for them stops nothing.
	if err := ap.writeFiles(ctx); err != nil {
		return inStep(errStepFiles, err)
	}
	if err := ap.ensureImages(ctx); err != nil || len(ap.res.Pulling)+len(ap.res.Building) > 0 {
		return err
	}
	if err := ap.checkNonRoot(ctx); err != nil {
		return err
	}
	// The volumes' group, before the init containers that may run
	// first and anything running is stopped.
	if err := ap.changeVolumeGroups(ctx); err != nil {
		return inStep(errStepFSGroup, err)
	}
	if initializing, err := ap.runInitsFirst(ctx); err != nil || initializing {
		return err
	}
	if err := ap.takeDown(ctx); err != nil {
		return err
	}
	// A plan that only restarts containers changes no volume.
	restartsOnly := ap.pp.restartsOnly()
	if !restartsOnly {
		if err := ap.ensureVolumes(ctx); err != nil {
			return err
		}
	}
	if err := ap.ensureNetworks(ctx); err != nil {
		return err
	}
	if err := ap.startInfra(ctx); err != nil {
		return err
	}
	if initializing, err := ap.runInits(ctx); err != nil || initializing {
		return err
	}
	if err := ap.startApps(ctx); err != nil {
		return err
	}
	// Once the containers replaced are gone (a volume in use by one
	// cannot be removed).
	ap.pruneOld = !restartsOnly
	return nil
}

// restartsOnly reports whether the plan does nothing but restart
// containers.
func (p PodPlan) restartsOnly() bool {
	for _, ch := range p.Changes {
		if ch.Action != ActionNone && ch.Action != ActionRestart {
			return false
		}
	}
	return true
}

// replaces reports whether action takes the slot's container down.
func replaces(action Action) bool { return action == ActionRecreate || action == ActionRemove }

// creates reports whether action makes a new container for the slot.
func creates(action Action) bool { return action == ActionCreate || action == ActionRecreate }

// writeFiles makes the files volumes of the pod's containers exist (a
// copy written before is only looked at), before anything is pulled or
// stopped, noting their copies' paths by digest: any container of a pod
// being changed may be created anew (its infra container was, or it does
// not start).
func (ap *podApplication) writeFiles(ctx context.Context) error {
	for _, c := range slices.Concat(ap.m.Containers, ap.m.InitContainers) {
		for _, vm := range c.VolumeMounts {
			v, _ := ap.m.Volume(vm.Name)
			if v.Files == nil || ap.copies[v.Files.Digest()] != "" {
				continue
			}
			content, sealed, err := ap.revealedFiles(v.Files)
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			store := ap.opts.Files
			if sealed {
				store = ap.opts.SecretFiles
			}
			if store == nil {
				return fmt.Errorf("volume %s: files %s: this hostlet has nowhere to write them (no stateDir, or no secrets.runtimeDir for decrypted files)", v.Name, v.Files.Source)
			}
			// Named by the manifest's digest (the tokens' for decrypted
			// files), as the containers' labels and mounts name it.
			p, err := store.Materialise(ctx, ap.opts.EnvHasher.CopyName(ap.m, v.Files), content)
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if ap.copies == nil {
				ap.copies = map[string]string{}
			}
			ap.copies[v.Files.Digest()] = p
		}
	}
	return nil
}

// ensureImages makes the images of the containers to be created usable,
// before anything is stopped. While one is being pulled (res.Pulling) the
// pod waits as it is.
func (ap *podApplication) ensureImages(ctx context.Context) error {
	for _, c := range ap.m.Containers {
		if creates(ap.apps[c.Name].Action) && c.Build != nil {
			if err := ap.build(ctx, c); err != nil {
				return inStep(errStepPull, fmt.Errorf("container %s: %w", c.Name, err))
			}
			continue
		}
		if creates(ap.apps[c.Name].Action) {
			if err := ap.image(ctx, &ap.res, c.Image, c.ImagePullPolicy); err != nil {
				return inStep(errStepPull, fmt.Errorf("container %s: %w", c.Name, err))
			}
		}
	}
	if ap.createsApp() {
		for _, c := range ap.m.InitContainers {
			if err := ap.image(ctx, &ap.res, c.Image, c.ImagePullPolicy); err != nil {
				return inStep(errStepPull, fmt.Errorf("init container %s: %w", c.Name, err))
			}
		}
	}
	if creates(ap.infra.Action) {
		if err := ap.image(ctx, &ap.res, ap.opts.InfraImage, manifest.PullIfNotPresent); err != nil {
			return inStep(errStepPull, fmt.Errorf("infra image: %w", err))
		}
	}
	return nil
}

// takeDown stops the replaced app containers and removes the removed
// ones (and duplicates, of the infra container too), then does the same
// for the infra container. A replaced container is removed after its
// successor starts (late) unless it must go first (lateRemoval).
func (ap *podApplication) takeDown(ctx context.Context) error {
	for i, ch := range ap.pp.Changes {
		if i == ap.infraAt || !replaces(ch.Action) {
			continue
		}
		if ch.Action == ActionRecreate && ap.chosenName(ch.Container) != "" && !replaces(ap.infra.Action) {
			// Replaced once its successor is created (createNamed); not
			// when the infra container whose network it joined goes: it
			// would run on with no network, and never start again.
			continue
		}
		ap.res.TookDown = ap.res.TookDown || ch.Current != nil
		if err := ap.replace(ctx, ch); err != nil {
			return inStep(errStepRemove, fmt.Errorf("container %s: %w", ch.Container, err))
		}
		if ch.Action == ActionRemove {
			ap.applied(ch)
		}
	}
	if replaces(ap.infra.Action) {
		ap.res.TookDown = ap.res.TookDown || ap.infra.Current != nil
		if err := ap.replace(ctx, ap.infra); err != nil {
			return inStep(errStepRemove, fmt.Errorf("infra container: %w", err))
		}
		if ap.infra.Action == ActionRemove {
			ap.applied(ap.infra)
		}
	}
	return nil
}

// replace takes down the container ch replaces or removes: stopped, its
// restart policy set to none and kept for removeLate when lateRemoval
// allows, else stopped and removed.
//
// Until it is removed, an engine restart must not start the kept
// container again beside its successor (an engine starts every container
// of policy always, stopped or not), so its policy goes before the
// successor is created; where the policy cannot be changed it goes now.
// The policy goes once the container is stopped: on a running container
// the engine also applies the change to its cgroup (a runtime process of
// its own, on the path to the successor's start). An engine restarted
// between the stop and the change has started it again: a second stop,
// of a stopped container a call that returns at once, stops it for good.
// A container with a preStop hook has its policy cleared first, as the
// hook may make it exit on its own (nginx -s quit), which an engine
// answers by starting a container of policy always again (one of
// restartPolicy OnFailure has it cleared by stop). A stopped container
// its policy does not start again (a completed job, of OnFailure or
// Never) keeps it: an engine restart leaves it stopped, and it does not
// pass for one a recreate stopped.
func (ap *podApplication) replace(ctx context.Context, ch Change) error {
	c := ch.Current
	if c == nil || !ap.lateRemoval(ch) {
		return ap.stopRemove(ctx, c, ap.grace)
	}
	if err := ap.dropJoiners(ctx, c.ID); err != nil {
		return err
	}
	created, known := createdPolicy(*c)
	if c.State == hruntime.StateExited && known && !shouldRun(created, *c) {
		ap.late = append(ap.late, *c)
		return nil
	}
	policyFirst := c.Running() && c.Labels[podspec.LabelPreStop] != "" && created != manifest.RestartOnFailure
	if policyFirst {
		if err := ap.rt.NoRestart(ctx, c.ID); err != nil {
			ap.keptNone(ch, err)
			return ap.stopRemove(ctx, c, ap.grace)
		}
		ap.notePolicyCleared(c.ID)
	}
	if c.Running() {
		if err := ap.stop(ctx, c, ap.grace); err != nil && !hruntime.IsNotFound(err) {
			if policyFirst {
				// It runs on, and stays: its policy back, or a revert
				// would keep it (running: nothing to do) without one;
				// also when the stop failed for hostlet's shutdown (its
				// policy, always, restarts it whatever its exit).
				restoreCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
				_ = ap.restorePolicy(restoreCtx, ch, podspec.EngineRestartPolicy(cmp.Or(created, ap.m.RestartPolicy)))
				cancel()
			}
			return err
		}
	}
	if !policyFirst {
		if err := ap.rt.NoRestart(ctx, c.ID); err != nil {
			ap.keptNone(ch, err)
			if rmErr := ap.rt.Remove(ctx, c.ID); rmErr != nil {
				return fmt.Errorf("%w (kept to remove after its successor's start, its restart policy could not be cleared: %w)", rmErr, err)
			}
			return nil
		}
		ap.notePolicyCleared(c.ID)
		if err := ap.rt.Stop(ctx, c.ID, ap.grace); err != nil && !hruntime.IsNotFound(err) {
			return err
		}
	}
	ap.late = append(ap.late, *c)
	return nil
}

// keptNone logs that the container ch replaces goes before its successor
// is created: the engine did not clear its restart policy (err).
func (ap *podApplication) keptNone(ch Change, err error) {
	ap.log.Info("replaced container removed before its successor is created: the engine did not clear its restart policy",
		"pod", ap.m.ID, "container", ch.Container, "error", err)
}

// lateRemoval reports whether the container ch recreates may stay,
// stopped, until its successor has started: not when the successor takes
// its name (the same spec, created anew), when the pod asks for a fixed
// address on a network (the engine could still hold it), nor when its
// containers share a namespace or choose a name (sharesANamespace).
func (ap *podApplication) lateRemoval(ch Change) bool {
	if ch.Action != ActionRecreate || ap.sharesANamespace() {
		return false
	}
	for _, n := range ap.m.Networks {
		if n.IPv4Address != "" || n.IPv6Address != "" {
			return false
		}
	}
	return strings.TrimPrefix(ch.Current.Name, "/") != ap.successorName(ch.Container)
}

// sharesANamespace reports whether the pod's containers join another's
// network namespace (an infra container's, or another pod's) or one of
// them chooses its name: their old containers go first, as before the
// reorder (an engine refuses to remove a namespace's holder while a
// stopped container still joins it, and a kill between the steps left
// pods that no sync could repair on Podman and Docker 29).
func (ap *podApplication) sharesANamespace() bool {
	if ap.pod.NeedsInfra() || ap.m.NetworkOf != "" {
		return true
	}
	return slices.ContainsFunc(ap.m.Containers, func(c manifest.Container) bool { return c.ContainerName != "" })
}

// successorName is the name hostlet gives the app container it creates
// for slot (a pod with an infra container never gets here:
// sharesANamespace).
func (ap *podApplication) successorName(slot string) string {
	for i, c := range ap.m.Containers {
		if c.Name == slot {
			return hruntime.ContainerName(ap.opts.Instance, ap.m.ID, slot, manifest.ContainerHash(ap.m, i))
		}
	}
	return ""
}

// ensureVolumes makes the pod's empty-dir volumes and named Docker
// volumes exist (an external one must be there already).
func (ap *podApplication) ensureVolumes(ctx context.Context) error {
	for _, v := range ap.m.Volumes {
		if err := ap.ensureVolume(ctx, v); err != nil {
			return inStep(errStepCreate, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}
	return nil
}

// ensureVolume makes v exist when it is an empty-dir volume or a named
// Docker volume (an external one must be there already); others are
// not the engine's.
func (ap *podApplication) ensureVolume(ctx context.Context, v manifest.Volume) error {
	switch {
	case v.HostPath != "", v.Files != nil, v.DataFolder != "":
		return nil
	case v.External:
		return ap.rt.CheckVolume(ctx, v.DockerVolume)
	case v.DockerVolume != "":
		return ap.rt.EnsureVolume(ctx, v.DockerVolume, ap.withFSGroup(map[string]string{
			hruntime.LabelManaged: "true", hruntime.LabelInstance: ap.opts.Instance, hruntime.LabelPersistent: "true",
		}))
	}
	return ap.rt.EnsureVolume(ctx, podspec.VolumeName(ap.opts.Instance, ap.m.ID, v.Name), ap.withFSGroup(map[string]string{
		hruntime.LabelManaged: "true", hruntime.LabelInstance: ap.opts.Instance,
		hruntime.LabelPod: ap.m.ID, hruntime.LabelVolume: v.Name,
	}))
}

// withFSGroup is a new volume's labels, with the pod's fsGroup if it has
// one (hruntime.LabelFSGroup).
func (ap *podApplication) withFSGroup(labels map[string]string) map[string]string {
	if ap.m.FSGroup != nil {
		labels[hruntime.LabelFSGroup] = strconv.FormatInt(*ap.m.FSGroup, 10)
	}
	return labels
}

// ensureNetworks makes the pod's networks exist before the container that
// holds its network namespace (the infra container, else the only one) is
// created.
func (ap *podApplication) ensureNetworks(ctx context.Context) error {
	if len(ap.m.Networks) == 0 {
		return nil
	}
	holder := ap.infra.Action
	if !ap.pod.NeedsInfra() {
		holder = ap.apps[ap.m.Containers[0].Name].Action
	}
	// A holder started again needs its networks too (one removed by hand
	// meanwhile is made anew).
	if !creates(holder) && holder != ActionRestart {
		return nil
	}
	labels := map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: ap.opts.Instance}
	for _, n := range podspec.Networks(ap.m.Networks) {
		if err := ap.ensureNetwork(ctx, n, labels); err != nil {
			return inStep(errStepCreate, fmt.Errorf("network %s: %w", n.Name, err))
		}
	}
	return nil
}

// ensureNetwork makes network n exist, once a pass for each setting of it.
func (a *applier) ensureNetwork(ctx context.Context, n hruntime.NetworkSpec, labels map[string]string) error {
	key := networkKey(n)
	a.networksMu.Lock()
	done := a.networks[key]
	a.networksMu.Unlock()
	if done {
		return nil
	}
	if err := a.rt.EnsureNetwork(ctx, n, labels); err != nil {
		return err
	}
	a.networksMu.Lock()
	defer a.networksMu.Unlock()
	if a.networks == nil {
		a.networks = map[string]bool{}
	}
	a.networks[key] = true
	return nil
}

// networkKey is n's settings as the network has them: without what is
// the joining container's own (its aliases and addresses).
func networkKey(n hruntime.NetworkSpec) string {
	n.Aliases, n.IPv4Address, n.IPv6Address = nil, "", ""
	return fmt.Sprintf("%#v", n)
}

// startInfra creates, or starts again, the infra container, and sets
// infraID to the one that is kept or made.
func (ap *podApplication) startInfra(ctx context.Context) error {
	if ap.infra.Current != nil && !replaces(ap.infra.Action) {
		ap.infraID = ap.infra.Current.ID
	}
	switch ap.infra.Action {
	case ActionCreate, ActionRecreate:
		if err := ap.createInfra(ctx, "infra container"); err != nil {
			return err
		}
		ap.applied(ap.infra)
	case ActionRestart:
		return ap.restartInfra(ctx)
	}
	return nil
}

// createInfra creates and starts the infra container; what names it in
// the error.
func (ap *podApplication) createInfra(ctx context.Context, what string) error {
	id, err := ap.createStart(ctx, podspec.Infra(ap.opts.Instance, ap.opts.InfraImage, ap.opts.InfraCommand, *ap.pod))
	if err != nil {
		return inStep(errStepCreate, fmt.Errorf("%s: %w", what, err))
	}
	ap.infraID = id
	return nil
}

// restartInfra starts the stopped infra container again. One whose start
// an engine restart cut ("task already exists", Exited 128) never starts
// again: it is created anew, as kubelet does for every restart. Other
// start errors (the engine going down, a port taken) are retried with
// backoff as before.
func (ap *podApplication) restartInfra(ctx context.Context) error {
	startErr := ap.rt.Start(ctx, ap.infraID)
	if startErr == nil {
		ap.applied(ap.infra)
		return nil
	}
	if !hruntime.IsStaleTask(startErr) {
		return inStep(errStepStart, fmt.Errorf("infra container: %w", startErr))
	}
	ap.log.Warn("infra container does not start; creating it anew", "pod", ap.m.ID, "error", startErr)
	if err := ap.takeDownForNewInfra(ctx); err != nil {
		return err
	}
	if err := ap.dropJoiners(ctx, ap.infraID); err != nil {
		return inStep(errStepStart, fmt.Errorf("infra container: %w (and remove it: %w)", startErr, err))
	}
	if err := ap.rt.Remove(ctx, ap.infraID); err != nil && !hruntime.IsNotFound(err) {
		return inStep(errStepStart, fmt.Errorf("infra container: %w (and remove it: %w)", startErr, err))
	}
	if err := ap.createInfra(ctx, fmt.Sprintf("infra container (did not start: %v; created anew)", startErr)); err != nil {
		return err
	}
	ap.applied(Change{Container: hruntime.InfraName, Action: ActionRecreate, Current: ap.infra.Current,
		Reasons: []string{fmt.Sprintf("did not start: %v", startErr)}})
	return nil
}

// takeDownForNewInfra stops and removes the app containers in the network
// namespace of an infra container that is created anew, and marks them to
// be created anew with it. Containers that are done and not to run again
// (restartPolicy Never, or OnFailure after success) are left as they are,
// never re-run.
func (ap *podApplication) takeDownForNewInfra(ctx context.Context) error {
	for _, c := range ap.m.Containers {
		ch := ap.apps[c.Name]
		if ch.Current == nil || ch.Action == ActionRecreate {
			continue
		}
		if ch.Action == ActionNone && !ch.Current.Running() {
			continue
		}
		ap.res.TookDown = true
		if err := ap.stopRemove(ctx, ch.Current, ap.grace); err != nil {
			return inStep(errStepRemove, fmt.Errorf("container %s: %w", c.Name, err))
		}
		ap.log.Info("removed container to create it anew with its pod's infra container", "pod", ap.m.ID, "container", c.Name)
		ap.apps[c.Name] = Change{Container: c.Name, Action: ActionRecreate, Current: ch.Current,
			Reasons: []string{"pod network: infra container created anew"}}
	}
	return nil
}

// startApps creates, or starts again, the app containers, in manifest
// order.
func (ap *podApplication) startApps(ctx context.Context) error {
	for i, c := range ap.m.Containers {
		ch := ap.apps[c.Name]
		var err error
		switch ch.Action {
		case ActionCreate, ActionRecreate:
			err = ap.createApp(ctx, i, "container "+c.Name, ch.Current)
		case ActionRestart:
			ch, err = ap.restartApp(ctx, i, ch)
		default:
			continue
		}
		if err != nil {
			return err
		}
		ap.applied(ch)
	}
	return nil
}

// createApp creates and starts app container i, its host paths resolved
// and checked again right before; what names it in the error of the
// create. A container whose manifest chooses its name replaces replaced
// (nil: none) once created (createNamed); any other's was taken down
// before.
func (ap *podApplication) createApp(ctx context.Context, i int, what string, replaced *hruntime.Container) error {
	if ap.m.NetworkOf != "" && ap.infraID == "" {
		// Never on Docker's default bridge instead.
		return inStep(errStepCreate, fmt.Errorf("container %s: pod %s has no container whose network to join", ap.m.Containers[i].Name, ap.m.NetworkOf))
	}
	spec := podspec.App(ap.opts.Instance, *ap.pod, i, ap.infraID, ap.opts.EnvHasher)
	// The fields first: a secret's plaintext is never read for tokens.
	if err := ap.resolveFields(ctx, &spec); err != nil {
		return inStep(errStepCreate, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if err := ap.labelPodIP(ctx, &spec, ap.m.Containers[i]); err != nil {
		return inStep(errStepCreate, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if err := ap.revealEnv(&spec); err != nil {
		return inStep(errStepSecrets, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if err := podspec.ResolveHostPaths(&spec, ap.m, i, ap.opts.HostPaths); err != nil {
		return inStep(errStepHostPath, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if err := podspec.BindFiles(&spec, ap.m, i, ap.copies); err != nil {
		return inStep(errStepFiles, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if err := podspec.BindDataFolders(&spec, ap.m, i, ap.ensureDataFolder); err != nil {
		return inStep(errStepFiles, fmt.Errorf("container %s: %w", ap.m.Containers[i].Name, err))
	}
	if name := ap.m.Containers[i].ContainerName; name != "" {
		id, err := ap.createNamed(ctx, spec, name, replaced, what)
		if err != nil {
			return err
		}
		return ap.postStart(ctx, i, id)
	}
	id, err := ap.createStart(ctx, spec)
	if err != nil {
		return inStep(errStepCreate, fmt.Errorf("%s: %w", what, err))
	}
	return ap.postStart(ctx, i, id)
}

// ensureDataFolder makes the data folder rel and returns its host path.
func (ap *podApplication) ensureDataFolder(rel string) (string, error) {
	if ap.opts.DataFolders == nil {
		return "", errors.New("this hostlet keeps no data folders (no stateDir)")
	}
	return ap.opts.DataFolders.Ensure(rel)
}

// chosenName is the container name the manifest chooses for slot, or "".
func (ap *podApplication) chosenName(slot string) string {
	for _, c := range ap.m.Containers {
		if c.Name == slot {
			return c.ContainerName
		}
	}
	return ""
}

// createNamed makes the container of spec under the name its manifest
// chose, in place of replaced (nil: none), so that the old one runs until
// its successor exists: the new one is created under the name hostlet
// gives it (spec.Name, its temporary name), replaced is stopped and
// removed, the new one renamed and started. A kill between two steps
// leaves what the next sync finishes: the new container under its
// temporary name beside the old (the old is removed as the slot's
// duplicate, the new renamed), the new one alone under it (renamed), or
// the new one renamed but not started (started). A name held by a
// container that is not replaced is a conflict naming it, before
// anything is stopped; one hostlet did not make is never removed.
func (ap *podApplication) createNamed(ctx context.Context, spec hruntime.ContainerSpec, name string, replaced *hruntime.Container, what string) (string, error) {
	holder, err := ap.rt.NameHolder(ctx, name)
	if err != nil {
		return "", inStep(errStepCreate, fmt.Errorf("%s: %w", what, err))
	}
	if holder.ID != "" && (replaced == nil || holder.ID != replaced.ID) && holder.Proven && ap.claimOf(name) == ap.m.ID {
		// Another of hostlet's containers keeps a name no other pod wants
		// now (names swapped, or passed on): it goes back to its own
		// name, and its pod's next apply recreates it as it wants.
		own := hruntime.ContainerName(ap.opts.Instance, holder.Labels[hruntime.LabelPod], holder.Labels[hruntime.LabelContainer], holder.Labels[hruntime.LabelHash])
		if err := ap.rt.Rename(ctx, holder.ID, own); err != nil {
			return "", inStep(errStepCreate, fmt.Errorf("%s: give container %.12s its own name back to free %q: %w", what, holder.ID, name, err))
		}
		holder = hruntime.Holder{}
	}
	if holder.ID != "" && (replaced == nil || holder.ID != replaced.ID) {
		whose := "a container hostlet did not make (left alone: remove or rename it)"
		if holder.Proven {
			whose = "another of this hostlet's containers (freed when its pod is removed or renamed)"
		}
		return "", inStep(errStepCreate, fmt.Errorf("%s: container name %q is held by container %.12s (image %s), %s: %w",
			what, name, holder.ID, holder.Image, whose, hruntime.ErrConflict))
	}
	var id string
	switch {
	case replaced != nil && replaced.Name == spec.Name && replaced.Labels[hruntime.LabelName] == name:
		// Left under its temporary name by a recreate cut short, with
		// this spec (the temporary name is the spec hash's) and name.
		id, replaced = replaced.ID, nil
	case replaced != nil && replaced.Name == spec.Name:
		// The same spec under hostlet's own name, now given a name: it
		// holds the temporary name, so it goes first, stopped gracefully.
		if err := ap.stopRemove(ctx, replaced, ap.grace); err != nil {
			return "", inStep(errStepRemove, fmt.Errorf("%s: the container it replaces: %w", what, err))
		}
		replaced = nil
	}
	if id == "" {
		if id, err = ap.create(ctx, spec); err != nil {
			return "", inStep(errStepCreate, fmt.Errorf("%s: %w", what, err))
		}
	}
	if err := ap.stopRemove(ctx, replaced, ap.grace); err != nil {
		return "", inStep(errStepRemove, fmt.Errorf("%s: the container it replaces: %w", what, err))
	}
	if err := ap.rt.Rename(ctx, id, name); err != nil {
		return "", inStep(errStepCreate, fmt.Errorf("%s: %w", what, err))
	}
	if err := ap.rt.Start(ctx, id); err != nil {
		return "", inStep(errStepCreate, fmt.Errorf("%s: %w: %w", what, errStart, err))
	}
	return id, nil
}

// restartApp restarts app container i (stopped, or to rejoin the pod's
// network) and returns the change carried out. As for the infra container,
// one that does not start is created anew.
func (ap *podApplication) restartApp(ctx context.Context, i int, ch Change) (Change, error) {
	name := ap.m.Containers[i].Name
	if ch.Current.Running() {
		if err := ap.stop(ctx, ch.Current, ap.grace); err != nil {
			return ch, inStep(errStepStart, fmt.Errorf("container %s: %w", name, err))
		}
	}
	// Its policy back while it is stopped (on a running container the
	// engine updates its cgroup too, and fails on one that just died);
	// one of restartPolicy OnFailure that does not start has it cleared
	// again, which tells the next hostlet it was not done.
	onFailure := stopsWithoutPolicy(*ch.Current)
	if !ch.Current.Running() || onFailure {
		if err := ap.restorePolicy(ctx, ch, podspec.EngineRestartPolicy(ap.m.RestartPolicy)); err != nil {
			return ch, inStep(errStepStart, fmt.Errorf("container %s: %w", name, err))
		}
	}
	startErr := ap.rt.Start(ctx, ch.Current.ID)
	if startErr == nil {
		return ch, ap.postStart(ctx, i, ch.Current.ID)
	}
	if onFailure {
		if err := ap.rt.NoRestart(ctx, ch.Current.ID); err != nil {
			// Its policy back, it passes for a completed job if it stays.
			ap.log.Warn("clear the restart policy of a container that did not start", "pod", ap.m.ID, "container", name, "error", err)
		}
	}
	if !hruntime.IsStaleTask(startErr) && !hruntime.IsNotFound(startErr) {
		return ch, inStep(errStepStart, fmt.Errorf("container %s: %w", name, startErr))
	}
	// Not found: the container, or the one whose network it joins, is
	// gone (an infra container replaced while it stayed).
	ap.log.Warn("container does not start; creating it anew", "pod", ap.m.ID, "container", name, "error", startErr)
	if err := ap.dropJoiners(ctx, ch.Current.ID); err != nil {
		return ch, inStep(errStepStart, fmt.Errorf("container %s: %w (and remove it: %w)", name, startErr, err))
	}
	if err := ap.rt.Remove(ctx, ch.Current.ID); err != nil && !hruntime.IsNotFound(err) {
		return ch, inStep(errStepStart, fmt.Errorf("container %s: %w (and remove it: %w)", name, startErr, err))
	}
	if err := ap.createApp(ctx, i, fmt.Sprintf("container %s (did not start: %v; created anew)", name, startErr), nil); err != nil {
		return ch, err
	}
	return Change{Container: name, Action: ActionRecreate, Current: ch.Current,
		Reasons: []string{fmt.Sprintf("did not start: %v", startErr)}}, nil
}

// restoreTimeout bounds the restart policy's restore after a failed stop,
// which may run while hostlet shuts down.
const restoreTimeout = 10 * time.Second

// restorePolicy gives the app container ch, about to be started again,
// the restart policy it was created with (policy), so an engine restarts it
// after a crash or a reboot again: hostlet cleared it (NoRestart) to
// keep the container until its successor started, or to stop it (of
// restartPolicy OnFailure), and it is wanted again (see policyMarks).
// Which stopped container had its policy cleared the list does not
// tell, so each one started again gets its policy back: one call, on a
// start that is rare (the engine restarts the crashed ones itself).
// Infra containers are never kept so. A refusal is logged; not found is
// let go (an engine without the update endpoint, Podman before 5.1, may
// answer so too). An engine that cannot be reached is the one error
// returned: the pass waits for the engine as before, and the
// container's mark stays for the next pass to set its policy back
// (tendPolicyMarks).
func (ap *podApplication) restorePolicy(ctx context.Context, ch Change, policy string) error {
	if policy == hruntime.RestartNo || ctx.Err() != nil {
		return nil
	}
	err := ap.rt.RestoreRestart(ctx, ch.Current.ID, policy)
	switch {
	case err == nil, hruntime.IsNotFound(err), ctx.Err() != nil:
		return nil
	case errors.Is(err, hruntime.ErrUnavailable):
		return err
	}
	ap.log.Info("the engine did not set the container's restart policy back; it runs with the one it has",
		"pod", ap.m.ID, "container", ch.Container, "policy", policy, "error", err)
	return nil
}

// pruneOldVolumes removes the pod's volumes no longer in the manifest; a
// failure is only logged.
func (ap *podApplication) pruneOldVolumes(ctx context.Context) {
	keep := map[string]bool{}
	for _, v := range ap.m.Volumes {
		// Only an empty dir keeps its Docker volume: one that became a
		// host path or a dockerVolume lets it go.
		if v.HostPath == "" && v.DockerVolume == "" && v.Files == nil && v.DataFolder == "" {
			keep[v.Name] = true
		}
	}
	if err := ap.pruneVolumes(ctx, ap.m.ID, keep); err != nil {
		ap.log.Warn("prune volumes", "pod", ap.m.ID, "error", err)
	}
}

// image makes ref usable under policy: pulled here when opts.Images is
// nil, else asked of opts.Images, noting in res an image being pulled.
func (a *applier) image(ctx context.Context, res *Result, ref, policy string) error {
	always := policy == hruntime.PullAlways
	if !always && a.imagePresent(ref) {
		return nil
	}
	var pulling bool
	var err error
	if a.opts.Images == nil {
		err = a.rt.EnsureImage(ctx, ref, policy)
	} else {
		pulling, err = a.opts.Images(ctx, ref, policy)
	}
	if pulling && !slices.Contains(res.Pulling, ref) {
		res.Pulling = append(res.Pulling, ref)
	}
	if err == nil && !pulling && !always {
		a.presentMu.Lock()
		defer a.presentMu.Unlock()
		if a.present == nil {
			a.present = map[string]bool{}
		}
		a.present[ref] = true
	}
	return err
}

// imagePresent reports whether this pass found image ref present: the
// pods of a pass that share an image look for it once, not once a pod.
func (a *applier) imagePresent(ref string) bool {
	a.presentMu.Lock()
	defer a.presentMu.Unlock()
	return a.present[ref]
}

// build makes the built image of container c usable: asked of
// opts.Builds, noting in res an image being built.
func (ap *podApplication) build(ctx context.Context, c manifest.Container) error {
	if ap.opts.Builds == nil {
		return fmt.Errorf("build image %s: %w: this hostlet does not build images here", c.Image, hruntime.ErrBuild)
	}
	building, err := ap.opts.Builds(ctx, ap.m.ID, c)
	if building && !slices.Contains(ap.res.Building, c.Image) {
		ap.res.Building = append(ap.res.Building, c.Image)
	}
	return err
}

// errStart marks a container that was created but did not start.
var errStart = errors.New("start failed")

func (a *applier) createStart(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	id, err := a.create(ctx, spec)
	if err != nil {
		return "", err
	}
	if err := a.rt.Start(ctx, id); err != nil {
		return id, fmt.Errorf("%w: %w", errStart, err)
	}
	return id, nil
}

// create creates the container of spec. A container holding its name
// that a list proves hostlet's is removed first (left by an interrupted
// apply).
func (a *applier) create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	id, err := a.rt.Create(ctx, spec)
	if hruntime.IsConflict(err) {
		// A container of that name is left from an interrupted apply that
		// the plan's list did not show as this slot's. It is removed only
		// when a list proves it hostlet's: a name alone is no proof.
		if rmErr := a.removeNamed(ctx, spec.Name); rmErr == nil {
			id, err = a.rt.Create(ctx, spec)
		} else {
			err = fmt.Errorf("%w (%w)", err, rmErr)
		}
	}
	return id, err
}

// removeNamed removes the container named name if a list returns it
// (one this instance proves it made, see hruntime.Proven); otherwise the
// container is left alone and that is the error.
func (a *applier) removeNamed(ctx context.Context, name string) error {
	list, err := a.rt.List(ctx)
	if err != nil {
		return err
	}
	for _, c := range podContainers(list) {
		if c.Name == name {
			return a.rt.Remove(ctx, c.ID)
		}
	}
	return fmt.Errorf("the name is held by a container hostlet cannot prove it made; left alone: %w", hruntime.ErrConflict)
}

// pruneVolumes removes the pod's volumes whose names are not in keep (all
// of them when keep is nil).
func (a *applier) pruneVolumes(ctx context.Context, pod string, keep map[string]bool) error {
	names, err := a.listVolumes(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		vp, vol, ok := parseVolumeName(n)
		if !ok || vp != pod || keep[vol] || podspec.VolumeName(a.opts.Instance, pod, vol) != n {
			continue
		}
		if err := a.rt.RemoveVolume(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// listVolumes lists this instance's volumes once a pass (the first pod
// that prunes asks; an error is not kept). A volume made later in the
// pass is one a desired pod uses, which no prune removes.
func (a *applier) listVolumes(ctx context.Context) ([]string, error) {
	a.volumesMu.Lock()
	defer a.volumesMu.Unlock()
	if a.volumes != nil {
		return a.volumes, nil
	}
	names, err := a.rt.ListVolumes(ctx)
	if err != nil {
		return nil, err
	}
	if names == nil {
		names = []string{} // listed: none
	}
	a.volumes = names
	return names, nil
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

// ReasonHostPath marks a pod whose host path is not allowed when its
// container is about to be created (a link changed after validation).
const ReasonHostPath = "HostPathNotAllowed"

// noteLate keeps ap for removeLate when it left containers to remove or
// volumes to prune.
func (a *applier) noteLate(ap *podApplication) {
	if len(ap.late) == 0 && !ap.pruneOld {
		return
	}
	a.lateMu.Lock()
	defer a.lateMu.Unlock()
	a.late = append(a.late, ap)
}

// removeLate removes the containers the pass's recreates stopped, each
// pod's in order (app containers, then the infra container whose network
// they joined), then the volumes its manifest no longer has; at most
// opts.Concurrency pods at once. A container not removed is only logged:
// it stays in its slot, stopped, and the next sync's plan removes it as the
// slot's older container (as one left by a hostlet killed before it got
// here).
func (a *applier) removeLate(ctx context.Context) {
	sem := make(chan struct{}, max(a.opts.Concurrency, 1))
	var wg gosync.WaitGroup
	for _, ap := range a.late {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ap.removeLate(ctx)
		}()
	}
	wg.Wait()
}

func (ap *podApplication) removeLate(ctx context.Context) {
	// The pod's Begin ended with its apply: a hold taken since holds (its
	// stopped containers stay, for the pass after its release).
	if ap.opts.Begin != nil {
		if !ap.opts.Begin(ap.m.ID) {
			ap.log.Info("pod held since its apply; the containers it replaced stay stopped", "pod", ap.m.ID)
			return
		}
		if ap.opts.End != nil {
			defer ap.opts.End(ap.m.ID)
		}
	}
	for _, c := range ap.late {
		if err := ap.rt.Remove(ctx, c.ID); err != nil {
			ap.log.Warn("replaced container not removed yet; the next sync removes it", "pod", ap.m.ID, "container", c.Slot(), "id", c.ID, "error", err)
			// A volume it holds cannot go either.
			return
		}
	}
	if ap.pruneOld {
		ap.pruneOldVolumes(ctx)
	}
}
