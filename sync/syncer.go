package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/datafolder"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/rollouts"
	"github.com/hostlet/hostlet/sync/statefile"
	"github.com/hostlet/hostlet/validate"
)

// Inspector reads what a list call does not carry (restart count, start
// time); the syncer calls it only on adoption and on engine events, never in
// a no-op sync.
type Inspector interface {
	Inspect(ctx context.Context, id string) (hruntime.Details, error)
}

// EventSource streams the engine's container events. The channel must be
// closed once ctx ends (Run waits for that before it returns).
type EventSource interface {
	Events(ctx context.Context) <-chan hruntime.Event
}

// FullRuntime is everything a running Syncer uses of the engine: no
// interface of its own, the union of the roles, each declared (at most five
// methods) beside what uses it: Engine, ImageEnsurer and Volumes (applying
// a plan, apply.go; ImageEnsurer also the puller, pull.go), Inspector and
// EventSource (the syncer, here), Execer (the prober, probe.go). The
// runtime package declares none: *runtime.Docker satisfies them.
type FullRuntime interface {
	Runtime
	Inspector
	EventSource
	Execer
	Builder
	InitWaiter
}

// Desired is the merged output of every source: the pods to run, the
// manifests rejected, and whether every source has delivered its first set
// (nothing is removed before that).
type Desired struct {
	Pods     []Pod
	Rejected []validate.Rejection
	Ready    bool
}

// Options configure a Syncer.
type Options struct {
	Instance   string
	InfraImage string
	// InfraCommand overrides the infra image's entrypoint; nil keeps it.
	InfraCommand []string
	// HostAddress tells the host's address (status.hostIP); nil: the
	// source address of the default route.
	HostAddress HostAddresser
	Interval    time.Duration
	Concurrency int
	// PullTimeout bounds one image pull (sync.pullTimeout); 0 means
	// DefaultPullTimeout. Pulls run outside the sync, at most Concurrency
	// at a time.
	PullTimeout time.Duration
	// BuildConcurrency bounds the image builds that run at once
	// (sync.buildConcurrency; below 1 means 1), BuildTimeout one build
	// (sync.buildTimeout; 0 means DefaultBuildTimeout). Builds run
	// outside the sync, as pulls do.
	BuildConcurrency int
	BuildTimeout     time.Duration
	// OnBuild, when set, is told the duration and outcome of every build.
	OnBuild func(d time.Duration, err error)
	Prune   bool
	// StateDir holds restarts.json; "" keeps restart counts in memory only.
	StateDir string
	// FSGroupMaxEntries bounds the files and folders of one volume a
	// pod's fsGroup change walks (0: fsgroup.DefaultMaxEntries).
	FSGroupMaxEntries int
	// DataDir holds the pods' data folders (dataFolder volumes), in the
	// instance's folder; "" is StateDir's data folder, and without a
	// StateDir a pod with a data folder fails.
	DataDir string
	// Clock is what the Syncer reads time from (its interval, backoff,
	// probe periods, status and event times); nil means clock.Real.
	Clock clock.Clock
	// OnSync, when set, is told the duration and outcome of every sync.
	OnSync func(d time.Duration, err error)
	// EnvHasher hides env values in status, labels and reasons; nil loads
	// (or creates) the host's key in StateDir, or, without a StateDir,
	// uses a random key for the Syncer's life.
	EnvHasher *EnvHasher
	// HostPaths are the host's hostPath rules (hostPathAllow, the engine's
	// socket); a host path is resolved and checked again right before its
	// container is created.
	HostPaths validate.Options
	// Files keeps the pods' files volumes; nil keeps them in
	// StateDir/files (without a StateDir a pod with one fails).
	Files FileStore
	// Secrets decrypts the encrypted files of the pods applied (nil: a
	// pod with one fails), and SecretFiles keeps the files volumes
	// holding their plaintext, on a tmpfs (secrets.runtimeDir; nil: a pod
	// with one fails).
	Secrets     SecretRevealer
	SecretFiles FileStore
	// Window, when set, says whether a maintenance window is open at a
	// time and, when it is not, when the next one opens: outside one,
	// changes that disrupt a running pod wait (sync.windows). Nil: always
	// open.
	// While one is open, next is when the one after it opens and closes
	// when it closes.
	Window func(t time.Time) (open bool, next, closes time.Time)
}

// FileStore keeps materialised files volumes: it writes them, and removes
// those whose digests are not kept.
type FileStore interface {
	FileWriter
	Prune(ctx context.Context, keep map[string]bool) (removed []string, err error)
}

// Syncer runs the reconcile loop and keeps the pods' status. It holds
// its rooms (the rollouts' store, the engine-side workers, the pods'
// state) rather than their fields; the spec translation is sync/podspec.
type Syncer struct {
	// data is the store of the pods' data folders (nil: none).
	data   *datafolder.Store
	rt     FullRuntime
	opts   Options // opts.Clock is what it reads time from
	log    *slog.Logger
	events *eventlog.Log
	// work are the engine-side workers: probes, pulls, builds and the
	// engine event pump.
	work workers
	// rollouts are the pods' updates, holds and last good versions
	// (saved in rollouts.json), with a lock of their own, taken after mu.
	rollouts *rollouts.Store
	// keyDamaged is the env hash key's problem found at start (nil when
	// none), reported by TrackStateFiles.
	keyDamaged *atomicfile.Problem
	// syncs is what only a sync pass touches, under its own lock.
	syncs passState

	// mu guards desired, pods and loop (but loop.wake).
	mu      gosync.Mutex
	desired desiredSet
	pods    podBook
	loop    loopState
}

// workers are the Syncer's engine-side workers, each with its own lock.
type workers struct {
	prober *prober
	// pulls runs image pulls outside the sync, builds image builds.
	pulls, builds *puller
	// eventsDropped counts the engine events dropped because the event
	// queue was full (see pumpEvents).
	eventsDropped atomic.Uint64
	// inits remembers the init containers whose failure was reported.
	inits InitRuns
}

// passState is what only a sync pass (or a probe's restart) touches.
type passState struct {
	// mu serialises syncs.
	mu gosync.Mutex
	// networksSwept: a sync has looked at every network of the instance
	// (see ApplyOptions.SweepNetworks).
	networksSwept bool
	// filesPruned: a sync has pruned the files store.
	filesPruned bool
	// adopted: the containers found at start have been adopted.
	adopted bool
	// recoverMarks are the pods' network recovery marks as the pass
	// began (podBook.recover).
	recoverMarks map[string]uint64
	// waitInits: the pass waits for init containers to exit (SyncOnce).
	waitInits bool
	// specs are the spec hashes and redacted copies of the manifests
	// the last pass planned.
	specs specMemos
	// marks are the containers hostlet left with their restart policy
	// cleared (policyMarks); cleared collects those of a pass's apply.
	marks   policyMarks
	cleared clearedIDs
}

// desiredSet is the desired state the sources delivered (SetDesired).
type desiredSet struct {
	set  Desired
	have bool
	// hashes are the PodHash of every desired pod, by ID.
	hashes map[string]string
}

// podBook is what the Syncer remembers of each pod between syncs: its
// state and status, network recoveries, backoff, failures and restart
// counts, and the containers it stops itself.
type podBook struct {
	states map[string]*podState
	// recover marks the pods whose network is to be recovered, each with
	// the generation of its mark (recoverGen when it was set): a pass
	// clears only a mark it saw, never one set while it ran.
	recover    map[string]uint64
	recoverGen uint64
	// ownStops holds the containers hostlet itself stops or removes, with
	// when: their die events are no crash (an infra container's asks for
	// no network recovery).
	ownStops map[string]time.Time
	// ownStarts holds the containers hostlet itself starts, how many
	// times and when it last did: their start events are not the
	// engine's restarts.
	ownStarts map[string]ownStart
	backoff   map[string]*backoff
	// failures counts the pods' failed applies by reason since start.
	failures map[string]uint64
	restarts *restartStore
	// outage is the engine's latest outage: the exits and restarts it
	// caused are no crashes (engineStoppedLocked).
	outage engineOutage
}

// loopState is when the loop syncs and how its syncs went.
type loopState struct {
	// wake asks the loop for a sync (Trigger); it needs no lock.
	wake chan struct{}
	// forceUntil ends a Force.
	forceUntil time.Time
	lastSync   SyncInfo
	started    time.Time
	running    time.Time // start of the sync now running, zero when idle
}

// SyncInfo describes the last finished sync.
type SyncInfo struct {
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"-"`
	DurMs    int64         `json:"durationMs"`
	Error    string        `json:"error"`
}

// New returns a Syncer. Nothing runs until Run or SyncOnce.
func New(rt FullRuntime, opts Options, log *slog.Logger, ev *eventlog.Log) (*Syncer, error) {
	opts.Clock = clock.Or(opts.Clock)
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.PullTimeout <= 0 {
		opts.PullTimeout = DefaultPullTimeout
	}
	rs, err := loadRestarts(opts.StateDir, opts.Clock)
	if err != nil {
		return nil, err
	}
	var keyDamaged *atomicfile.Problem
	// A key missing while a file sealed with it exists is lost, not new.
	lostKey := opts.EnvHasher == nil && opts.StateDir != "" &&
		!fileExists(filepath.Join(opts.StateDir, EnvKeyFile)) && fileExists(filepath.Join(opts.StateDir, RolloutsFile))
	if opts.EnvHasher == nil {
		if opts.StateDir == "" {
			opts.EnvHasher = RandomEnvHasher()
		} else if opts.EnvHasher, keyDamaged, err = podspec.LoadEnvHasherAt(opts.StateDir, log, opts.Clock.Now()); err != nil {
			return nil, err
		}
	}
	if lostKey && keyDamaged == nil {
		keyDamaged = &atomicfile.Problem{File: EnvKeyFile, Op: atomicfile.OpRead, Since: opts.Clock.Now().UTC(),
			Error: "missing while " + RolloutsFile + " sealed with it exists: the last ready versions cannot be read (holds and held back versions are kept apart)"}
		log.Warn("env hash key missing; a new one is made (the saved last ready versions cannot be read)", "file", EnvKeyFile)
	}
	var sealer *seal.Sealer
	if opts.StateDir != "" {
		if sealer, err = opts.EnvHasher.StateSealer(); err != nil {
			return nil, err
		}
	}
	if opts.Files == nil && opts.StateDir != "" {
		opts.Files = filestore.New(filepath.Join(opts.StateDir, "files"))
	}
	s := &Syncer{
		rt: rt, opts: opts, log: log, events: ev,
		desired: desiredSet{hashes: map[string]string{}},
		pods: podBook{states: map[string]*podState{}, recover: map[string]uint64{}, ownStops: map[string]time.Time{}, ownStarts: map[string]ownStart{},
			backoff: map[string]*backoff{}, failures: map[string]uint64{}, restarts: rs},
		loop:       loopState{wake: make(chan struct{}, 1), started: opts.Clock.Now()},
		rollouts:   rollouts.Load(opts.StateDir, opts.Clock, sealer, log),
		keyDamaged: keyDamaged,
	}
	s.data = s.dataFolders()
	s.work.prober = newProber(rt, log, s.onUnhealthy, opts.Clock)
	s.work.prober.onReady = s.Trigger
	s.work.pulls = newPuller(rt, opts.PullTimeout, opts.Concurrency, log, s.Trigger, opts.Clock)
	if opts.BuildTimeout <= 0 {
		opts.BuildTimeout = DefaultBuildTimeout
	}
	s.work.builds = newPuller(rt, opts.BuildTimeout, opts.BuildConcurrency, log, s.Trigger, opts.Clock)
	s.work.builds.what, s.work.builds.timeoutKey, s.work.builds.class = "build image", "sync.buildTimeout", hruntime.ErrBuild
	s.work.builds.wanted = func(ref string) bool { return s.wantedImages()[ref] }
	return s, nil
}

// EnvHasher is the hasher that hides env values in the Syncer's status
// and labels (GET /pods/{id} shows the engine's env with it too).
func (s *Syncer) EnvHasher() *EnvHasher { return s.opts.EnvHasher }

// dataFolders is the store of the pods' data folders: under DataDir, else
// StateDir's data folder; nil with neither.
func (s *Syncer) dataFolders() *datafolder.Store {
	dir := s.opts.DataDir
	if dir == "" && s.opts.StateDir != "" {
		dir = filepath.Join(s.opts.StateDir, "data")
	}
	if dir == "" {
		return nil
	}
	return datafolder.New(dir, s.opts.Instance)
}

// SetDesired replaces the desired state and wakes the loop.
func (s *Syncer) SetDesired(d Desired) {
	hashes := podHashes(d.Pods)
	s.mu.Lock()
	s.desired.set, s.desired.have, s.desired.hashes = d, true, hashes
	s.mu.Unlock()
	s.Trigger()
}

// Trigger asks for a sync soon; calls coalesce.
func (s *Syncer) Trigger() {
	select {
	case s.loop.wake <- struct{}{}:
	default:
	}
}

// Run syncs every interval, whenever Trigger is called, on engine events
// and when an image pull ends, until ctx ends. A sync never waits for a
// pull: the pod waits (Pending, reason Pulling) while the others go on.
// Engine events are read on a goroutine of their own into a bounded queue
// (see pumpEvents), so a long sync never holds up the engine's stream.
// Containers are left running when it returns; every goroutine it started
// (the event reader, pulls, probe workers) is stopped and joined first.
func (s *Syncer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	evs, pumped := s.pumpEvents(ctx, s.rt.Events(ctx))
	// The start events of starts made before hostlet listened (by
	// SyncOnce) never come: their marks would swallow the engine's.
	s.mu.Lock()
	clear(s.pods.ownStarts)
	s.mu.Unlock()
	defer func() {
		cancel()
		<-pumped
		s.Close()
	}()
	t := s.opts.Clock.NewTicker(s.opts.Interval)
	defer t.Stop()
	// due wakes the loop when a rollout's minReadySeconds or deadline
	// passes between ticks.
	due := s.opts.Clock.NewTimer(time.Hour)
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-due.C():
		case <-s.loop.wake:
		case e, ok := <-evs:
			if !ok {
				evs = nil
				continue
			}
			want := s.handleEvent(ctx, e)
			var more bool
			evs, more = s.drainEvents(ctx, evs)
			if !want && !more {
				continue
			}
		}
		s.mu.Lock()
		have := s.desired.have
		s.mu.Unlock()
		if !have {
			continue
		}
		if err := s.sync(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Warn("sync failed", "error", err)
		}
		next := time.Hour
		if d := s.dueRollout(); !d.IsZero() {
			next = max(d.Sub(s.opts.Clock.Now())+10*time.Millisecond, 10*time.Millisecond)
		}
		due.Stop()
		due.Reset(next)
	}
}

// maxDrainedEvents bounds the events drainEvents takes at once (the
// pump's queue holds as many), so a steady stream cannot hold off a sync.
const maxDrainedEvents = 1000

// drainEvents handles the events already queued on evs, without waiting
// for more, and reports whether one of them asks for a sync: a sync
// follows the burst a pass leaves (a stop, die, destroy, create and start
// for each container it replaced), not each of its events. evs is nil
// once closed.
func (s *Syncer) drainEvents(ctx context.Context, evs <-chan hruntime.Event) (<-chan hruntime.Event, bool) {
	want := false
	for range maxDrainedEvents {
		select {
		case e, ok := <-evs:
			if !ok {
				return nil, want
			}
			want = s.handleEvent(ctx, e) || want
		default:
			return evs, want
		}
	}
	return evs, want
}

// SyncOnce lists the engine's containers once, plans, applies and updates
// status. A no-op sync costs one list call and nothing else. Unlike the
// syncs of Run, it converges in one call (hostlet run --once): it waits for
// the image pulls it started (each bounded by PullTimeout; the pods are
// Pending/Pulling meanwhile, and syncs of Run are not held up) and syncs
// again to apply them. When ctx ends, its pulls are cancelled and joined.
// The liveness probes it starts go on after it returns, until ctx ends, a
// later sync stops them or Close: a caller of SyncOnce without Run calls
// Close when done.
func (s *Syncer) SyncOnce(ctx context.Context) error {
	return s.sync(ctx, true)
}

// Close stops the goroutines that syncs left running, the probe workers
// and any image pull, and waits until they have returned. Containers keep
// running. Run does this itself when it returns; a caller of SyncOnce
// alone calls Close after its last SyncOnce has returned. Close may be
// called more than once; a later sync starts the probes again.
func (s *Syncer) Close() {
	s.work.pulls.stop()
	s.work.builds.stop()
	s.work.prober.stopAll()
}

// maxPullWaits bounds how often SyncOnce waits for pulls and syncs again
// (a pod's pulls start in one sync; an image removed right after its pull
// must not keep it going).
const maxPullWaits = 3

// sync runs one sync and, with waitPulls, waits for the pulls it started
// and syncs again; it records the outcome once.
func (s *Syncer) sync(ctx context.Context, waitPulls bool) error {
	start := s.opts.Clock.Now()
	s.mu.Lock()
	s.loop.running = start
	s.mu.Unlock()

	var errs []error
	for i := 0; ; i++ {
		errs = append(errs, s.pass(ctx, waitPulls))
		if !waitPulls || i == maxPullWaits || (!s.work.pulls.outstanding() && !s.work.builds.outstanding()) {
			break
		}
		if err := s.work.pulls.wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("wait for image pulls: %w", err))
			s.work.pulls.stop()
			s.work.builds.stop()
			break
		}
		if err := s.work.builds.wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("wait for image builds: %w", err))
			s.work.builds.stop()
			break
		}
	}
	err := joinErrors(errs)

	end := s.opts.Clock.Now()
	s.mu.Lock()
	s.loop.running = time.Time{}
	s.loop.lastSync = SyncInfo{Start: start, Duration: end.Sub(start), DurMs: end.Sub(start).Milliseconds()}
	if err != nil {
		s.loop.lastSync.Error = err.Error()
	}
	s.mu.Unlock()
	if s.opts.OnSync != nil {
		s.opts.OnSync(end.Sub(start), err)
	}
	return err
}

// pass is one sync: list, plan, apply, status.
func (s *Syncer) pass(ctx context.Context, waitInits bool) error {
	s.syncs.mu.Lock()
	defer s.syncs.mu.Unlock()
	s.syncs.waitInits = waitInits
	s.mu.Lock()
	desired := s.desired.set
	var view updateView
	desired.Pods, view = s.effectiveLocked(desired.Pods)
	recoverPods := make(map[string]bool, len(s.pods.recover))
	for k := range s.pods.recover {
		recoverPods[k] = true
	}
	s.syncs.recoverMarks = nil // a no-op sync allocates none
	if len(s.pods.recover) > 0 {
		s.syncs.recoverMarks = maps.Clone(s.pods.recover)
	}
	s.mu.Unlock()
	s.work.pulls.beginPass()
	defer s.work.pulls.endPass()
	s.work.builds.beginPass()
	defer s.work.builds.endPass()
	return s.syncOnce(ctx, desired, recoverPods, view)
}

// syncOnce plans the desired pods (the held back ones replaced by their
// last good version, see view) against one list of the engine's
// containers, applies the plan, and moves the rollouts on.
func (s *Syncer) syncOnce(ctx context.Context, desired Desired, recoverPods map[string]bool, view updateView) error {
	actual, err := s.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	actual = podContainers(actual)
	if !s.syncs.adopted {
		for pod := range s.adopt(ctx, actual, desired.Pods) {
			recoverPods[pod] = true
		}
	}
	if len(recoverPods) > 0 {
		s.refreshInfra(ctx, actual, recoverPods, desired.Pods)
	}
	s.syncs.specs.keepOnly(desired.Pods)
	s.tendPolicyMarks(ctx, actual, s.opts.Clock.Now())
	plan := MakePlan(desired.Pods, actual, PlanOptions{Prune: s.opts.Prune && desired.Ready, Recover: recoverPods,
		EnvHasher: s.opts.EnvHasher, PolicyCleared: s.syncs.marks.stopped, specs: &s.syncs.specs})
	s.forgetConvergedBackoff(plan)
	for i := range plan.Pods {
		if pp := &plan.Pods[i]; view.Restoring[pp.ID] {
			markRestore(pp)
		}
	}
	waits := dependencyWaits(plan, actual)
	windowWaits := s.windowWaits(plan, view)
	// A backoff delays another try at a failing pod, never the removal of
	// one no source declares any more.
	removing := map[string]bool{}
	for _, pp := range plan.Pods {
		if pp.Remove() {
			removing[pp.ID] = true
		}
	}
	s.noteWaits(waits, windowWaits, plan, view.Held)
	skip := func(id string) bool {
		return view.Held[id] || windowWaits[id] != "" || waits[id] != "" || (s.backingOff(id) && !removing[id])
	}
	opts := s.applyOptions(skip, !s.syncs.networksSwept && s.opts.Prune && desired.Ready)
	opts.PolicyCleared = &s.syncs.cleared
	results := Apply(ctx, stopMarker{Runtime: s.rt, s: s}, plan, opts, s.log)
	if s.opts.Prune && desired.Ready {
		s.syncs.networksSwept = true
	}
	s.notePulls(results)
	s.syncs.marks.afterApply(results, s.syncs.cleared.take())
	if slices.ContainsFunc(results, func(r Result) bool { return len(r.Applied) > 0 || r.Err != nil }) {
		s.record(results)
		// Status must show what the engine runs now: list once more, only
		// after a sync that changed something.
		if after, err := s.rt.List(ctx); err == nil {
			actual = podContainers(after)
		}
	}
	if !s.syncs.filesPruned || slices.ContainsFunc(results, func(r Result) bool { return len(r.Applied) > 0 }) {
		s.pruneFiles(ctx, desired, actual)
	}
	var touched map[string]bool // made only when a pod was touched: no-op syncs stay free
	for _, r := range results {
		if len(r.Applied) > 0 || r.TookDown {
			if touched == nil {
				touched = map[string]bool{}
			}
			touched[r.ID] = true
		}
	}
	now := s.opts.Clock.Now()
	view.runs = s.confirmReadyRuns(ctx, actual, now)
	s.advanceRollouts(view, desired.Ready, actual, touched, now)
	s.updateStatus(desired, actual)
	s.work.prober.update(ctx, unheld(desired.Pods, view.Held), actual, &s.syncs.specs)
	var failed []error
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, fmt.Errorf("pod %s: %w", r.ID, r.Err))
		}
	}
	return joinErrors(failed)
}

// applyOptions are the options of one sync's Apply.
func (s *Syncer) applyOptions(skip func(id string) bool, sweepNetworks bool) ApplyOptions {
	owners, _ := s.rt.(VolumeOwners)
	return ApplyOptions{
		Instance: s.opts.Instance, InfraImage: s.opts.InfraImage, InfraCommand: s.opts.InfraCommand, Concurrency: s.opts.Concurrency,
		Skip: skip, Begin: s.beginApply, End: s.endApply, EnvHasher: s.opts.EnvHasher,
		HostPaths: s.opts.HostPaths, Images: s.work.pulls.check, Builds: s.checkBuild,
		SweepNetworks:     sweepNetworks,
		Files:             s.fileWriter(),
		Secrets:           s.opts.Secrets,
		SecretFiles:       s.secretFileWriter(),
		DataFolders:       s.data,
		FSGroupMaxEntries: s.opts.FSGroupMaxEntries,
		VolumeOwners:      owners,
		Exec:              s.rt,
		Inspect:           s.rt,
		Inits:             &s.work.inits,
		WaitInit:          s.initWaiter(),
		HostAddress:       s.opts.HostAddress,
	}
}

// initWaiter is what waits for init containers in this pass: the
// runtime in a pass that waits for them (SyncOnce), else nil.
func (s *Syncer) initWaiter() InitWaiter {
	if s.syncs.waitInits {
		return s.rt
	}
	return nil
}

// fileWriter is the Files store as ApplyOptions take it (nil when none).
func (s *Syncer) fileWriter() FileWriter {
	if s.opts.Files == nil {
		return nil
	}
	return s.opts.Files
}

// secretFileWriter is the SecretFiles store as ApplyOptions take it (nil
// when none).
func (s *Syncer) secretFileWriter() FileWriter {
	if s.opts.SecretFiles == nil {
		return nil
	}
	return s.opts.SecretFiles
}

// pruneFiles removes the materialised files that neither a desired pod nor
// a container listed in actual (one left running, a pod skipped this
// time) mounts. Failures are only logged: a later sync tries again.
func (s *Syncer) pruneFiles(ctx context.Context, desired Desired, actual []hruntime.Container) {
	if s.opts.Files == nil {
		return
	}
	keep := map[string]bool{}
	// The last ready versions' files too: a rollback mounts them again.
	pods := append(slices.Clone(desired.Pods), s.rollouts.GoodPods()...)
	for _, p := range pods {
		for _, v := range p.Manifest.Volumes {
			if v.Files != nil {
				keep[s.opts.EnvHasher.CopyName(p.Manifest, v.Files)] = true
			}
		}
	}
	for _, c := range actual {
		for d := range strings.SplitSeq(c.Labels[LabelFiles], ",") {
			keep[d] = true
		}
	}
	if s.opts.SecretFiles != nil {
		// Decrypted files go as soon as nothing mounts them.
		if gone, err := s.opts.SecretFiles.Prune(ctx, keep); err != nil {
			s.log.Warn("prune decrypted files", "error", err)
		} else if len(gone) > 0 {
			s.log.Debug("removed decrypted files no container mounts", "files", len(gone))
		}
	}
	removed, err := s.opts.Files.Prune(ctx, keep)
	if err != nil {
		s.log.Warn("prune materialised files", "error", err)
		return
	}
	s.syncs.filesPruned = true
	if len(removed) > 0 {
		s.log.Info("removed materialised files no pod uses", "count", len(removed))
	}
}

// joinErrors aggregates errs (go-multierror, nil ones left out, nested
// ones flattened), one per line: the text of lastSync.error.
func joinErrors(errs []error) error {
	var all *multierror.Error
	for _, err := range errs {
		if err != nil {
			all = multierror.Append(all, err)
		}
	}
	if all == nil {
		return nil
	}
	all.ErrorFormat = func(es []error) string {
		lines := make([]string, len(es))
		for i, e := range es {
			lines[i] = e.Error()
		}
		return strings.Join(lines, "\n")
	}
	return all
}

// refreshInfra replaces the listed state of the containers holding the
// network of pods whose network is to be recovered (their infra
// container, or for a pod with networkOf the other pod's container) with
// the state an inspect reports. Just after such a container died, the
// engine's list may still show it running; planning on that, the app
// containers would be restarted into a namespace that is gone. A pod
// whose holder runs and whose app containers all started after it is
// recovered already: it leaves recoverPods. Only pods with a dead holder
// cost calls.
func (s *Syncer) refreshInfra(ctx context.Context, actual []hruntime.Container, recoverPods map[string]bool, desired []Pod) {
	joiners := holdersToRefresh(actual, recoverPods, desired)
	for i := range actual {
		c := &actual[i]
		pods, ok := joiners[c.ID]
		if !ok {
			continue
		}
		d, err := s.rt.Inspect(ctx, c.ID)
		if err != nil {
			s.log.Warn("inspect the container holding a pod's network", "pod", c.Pod(), "error", err)
			continue
		}
		switch {
		case !d.Running:
			c.State, c.ExitCode = hruntime.StateExited, d.ExitCode
		case d.FinishedAt.After(d.StartedAt):
			// The engine reports a container it is about to restart as
			// running, its last run finished after it started.
			c.State = hruntime.StateRestarting
		default:
			c.State = hruntime.StateRunning
			for _, pod := range pods {
				if s.joinedSince(ctx, actual, pod, d.StartedAt) {
					// Its death was news already acted on (an engine
					// whose events lag behind its list: Podman): the app
					// containers run in its namespace as it is now.
					delete(recoverPods, pod)
					s.clearRecoverMark(pod)
				}
			}
		}
	}
}

// holdersToRefresh maps the ID of each listed container holding the
// network of a pod to recover to those pods: an infra container to its
// pod, and the container a pod with networkOf joins to that pod.
func holdersToRefresh(actual []hruntime.Container, recoverPods map[string]bool, desired []Pod) map[string][]string {
	out := map[string][]string{}
	for pod, h := range joinedHolders(actual, joinersOf(desired, func(id string) bool { return recoverPods[id] })) {
		out[h.ID] = append(out[h.ID], pod)
	}
	for _, c := range actual {
		if c.Slot() == hruntime.InfraName && recoverPods[c.Pod()] {
			out[c.ID] = append(out[c.ID], c.Pod())
		}
	}
	return out
}

// joinersOf maps the desired pods with networkOf that keep takes to the
// pod whose network each joins.
func joinersOf(desired []Pod, keep func(id string) bool) map[string]string {
	var of map[string]string
	for _, p := range desired {
		if p.Manifest.NetworkOf != "" && keep(p.Manifest.ID) {
			if of == nil {
				of = map[string]string{}
			}
			of[p.Manifest.ID] = p.Manifest.NetworkOf
		}
	}
	return of
}

// markRecoverLocked marks pod's network to be recovered (s.mu held).
func (s *Syncer) markRecoverLocked(pod string) {
	s.pods.recoverGen++
	s.pods.recover[pod] = s.pods.recoverGen
}

// clearRecoverMark clears pod's recovery mark if it is still the one the
// pass began with: an infra death noted while the pass ran stays marked.
func (s *Syncer) clearRecoverMark(pod string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearRecoverMarkLocked(pod)
}

func (s *Syncer) clearRecoverMarkLocked(pod string) {
	if gen, ok := s.syncs.recoverMarks[pod]; ok && s.pods.recover[pod] == gen {
		delete(s.pods.recover, pod)
	}
}

// joinedSince reports whether every running app container of pod
// started at or after infraStart, the start of the infra container
// running now: they joined its network namespace as it is. An inspect
// that fails answers false (the pod's network is recovered).
func (s *Syncer) joinedSince(ctx context.Context, actual []hruntime.Container, pod string, infraStart time.Time) bool {
	for _, c := range actual {
		if c.Pod() != pod || c.Slot() == hruntime.InfraName || !c.Running() {
			continue
		}
		d, err := s.rt.Inspect(ctx, c.ID)
		if err != nil || !d.Running || d.StartedAt.Before(infraStart) {
			return false
		}
	}
	return true
}

// countRestartLocked counts hostlet's restart of a container; of one
// that had exited on its own (not stopped by the engine going down), a
// crash. Its start event, marked as
// hostlet's own (markOwnStart), is not counted again.
func (s *Syncer) countRestartLocked(ps *podState, pod string, ch Change, now time.Time) {
	s.pods.restarts.add(pod, ch.Container, 1)
	if c := ch.Current; c != nil && c.State == hruntime.StateExited && !s.engineStoppedLocked(ps, ch.Container, c.ID, ps.started[ch.Container], now) {
		ps.crash(ch.Container, time.Time{}, now)
	}
}

// adopt reads what a list does not carry for containers found at start:
// the engine's restart counts (restarts that happened while hostlet was
// down), start times and restart policies (those a recreate cut short
// cleared: markAdoptedPolicy). Adopted running containers are never
// restarted, with one exception: when the engine restarted a pod's infra
// container after an app container of the pod started (its process
// crashed while hostlet was down), that app container is in a network
// namespace that is gone, and the pod's network is recovered. adopt
// returns the pods to recover.
func (s *Syncer) adopt(ctx context.Context, actual []hruntime.Container, desired []Pod) map[string]bool {
	infraStart := map[string]time.Time{}
	appStart := map[string]time.Time{} // the earliest start of a running app container, by pod
	started := map[string]time.Time{}  // by container ID, of the running ones
	// Each slot's own container last (slotsOver), so its start is the
	// slot's, not that of an older one a recreate left stopped.
	ordered := slices.Clone(actual)
	sortContainers(ordered)
	slices.Reverse(ordered)
	for _, c := range ordered {
		d, err := s.rt.Inspect(ctx, c.ID)
		if err != nil {
			s.log.Warn("inspect adopted container", "pod", c.Pod(), "container", c.Slot(), "error", err)
			continue
		}
		if c.Slot() != hruntime.InfraName && !isInit(c) {
			s.markAdoptedPolicy(ctx, c, d, s.opts.Clock.Now())
		}
		if d.Running {
			started[c.ID] = d.StartedAt
		}
		if c.Slot() == hruntime.InfraName {
			if d.Running {
				infraStart[c.Pod()] = d.StartedAt
			}
			continue
		}
		if d.Running {
			if t, ok := appStart[c.Pod()]; !ok || d.StartedAt.Before(t) {
				appStart[c.Pod()] = d.StartedAt
			}
		}
		s.mu.Lock()
		s.pods.restarts.observe(c.Pod(), c.Slot(), c.ID, restartsMade(d))
		s.mu.Unlock()
		s.adoptedStart(c.Pod(), c.Slot(), c.ID, d.StartedAt)
	}
	s.saveRestarts()
	s.syncs.adopted = true
	s.log.Info("adopted running containers", "containers", len(actual))
	recoverPods := map[string]bool{}
	for pod, it := range infraStart {
		if at, ok := appStart[pod]; ok && it.After(at) {
			recoverPods[pod] = true
			s.log.Warn("the infra container restarted after the pod's containers; the pod's network will be recovered", "pod", pod)
		}
	}
	for pod := range joinersStartedEarly(actual, desired, started, appStart) {
		recoverPods[pod] = true
		s.log.Warn("the container holding the network this pod joins restarted after it; the pod will rejoin", "pod", pod)
	}
	if len(recoverPods) > 0 {
		s.mu.Lock()
		for pod := range recoverPods {
			s.markRecoverLocked(pod)
			if s.syncs.recoverMarks == nil {
				s.syncs.recoverMarks = map[string]uint64{}
			}
			s.syncs.recoverMarks[pod] = s.pods.recover[pod]
		}
		s.mu.Unlock()
	}
	return recoverPods
}

// restartsMade is how many restarts the engine made of an inspected
// container: its restart count, but for one it waits to make (Docker
// counts a restart as the container dies, then waits to start it again):
// that one's start event counts it.
func restartsMade(d hruntime.Details) int {
	if d.Restarting && d.RestartCount > 0 {
		return d.RestartCount - 1
	}
	return d.RestartCount
}

// Failures returns how many times applying a pod failed since start, by
// reason (the reason of the pod's status: ErrImagePull, EngineUnavailable,
// CreateContainerError, ...).
func (s *Syncer) Failures() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.pods.failures)
}

// record logs and records the outcome of applying each pod and updates
// backoff, last actions and restart counts, then saves the counts (the
// write outside mu).
func (s *Syncer) record(results []Result) {
	s.mu.Lock()
	s.recordLocked(results)
	snap := s.pods.restarts.snapshot()
	s.mu.Unlock()
	s.writeRestarts(snap)
}

// recordLocked is record's work; the caller holds mu.
func (s *Syncer) recordLocked(results []Result) {
	now := s.opts.Clock.Now()
	for _, r := range results {
		if r.waiting() {
			// Nothing done yet (notePulls): backoff and marks stay. A
			// failed pull fails the pod even while another of its images
			// is still being pulled.
			continue
		}
		ps := s.podStateLocked(r.ID)
		for _, ch := range r.Applied {
			if ch.Container == hruntime.InfraName && ch.Action != ActionRemove {
				continue
			}
			reason := joinReasons(ch.Reasons)
			ps.lastAction = &LastAction{Action: string(ch.Action), Container: ch.Container, Reason: reason, Time: now}
			s.events.Record(eventlog.Event{Time: now, Type: eventType(ch.Action), Pod: r.ID, Container: ch.Container, Reason: reason})
			s.log.Info("applied", "pod", r.ID, "container", ch.Container, "action", ch.Action, "reason", reason)
			if ch.Action == ActionRestart && ch.Container != hruntime.InfraName {
				s.countRestartLocked(ps, r.ID, ch, now)
			}
			if ch.Action == ActionRecreate || ch.Action == ActionCreate {
				s.pods.restarts.replaced(r.ID, ch.Container)
			}
		}
		if r.Plan.Remove() && r.Err == nil {
			delete(s.pods.states, r.ID)
			delete(s.pods.backoff, r.ID)
			s.pods.restarts.forget(r.ID)
			continue
		}
		if r.Err == nil && !r.Plan.infraWait {
			// The pod's network is recovered. After a failure the mark
			// stays, so the retry still moves every container over.
			s.clearRecoverMarkLocked(r.ID)
		}
		if r.Err != nil {
			var pe *PodError
			reason := "Error"
			if errors.As(r.Err, &pe) {
				reason = pe.Reason
			}
			b := s.pods.backoff[r.ID]
			if b == nil {
				b = &backoff{}
				s.pods.backoff[r.ID] = b
			}
			b.fail(now)
			s.pods.failures[reason]++
			ps.failReason, ps.failMessage, ps.initializing = reason, r.Err.Error(), ""

			typ := eventlog.Failed
			switch reason {
			case ReasonPull:
				typ = eventlog.PullFailed
			case ReasonBuild:
				typ = eventlog.BuildFailed
			}
			s.events.Record(eventlog.Event{Time: now, Type: typ, Pod: r.ID, Reason: reason, Message: r.Err.Error()})
			s.log.Warn("pod failed", "pod", r.ID, "reason", reason, "error", r.Err, "retry_in", b.delay())
			continue
		}
		if r.Initializing == "" {
			// An init container run again after its failure keeps the
			// backoff until the pod is through: a failing one waits
			// longer each time.
			delete(s.pods.backoff, r.ID)
		}
		ps.failReason, ps.failMessage, ps.initializing = "", "", r.Initializing
	}
}

// noteWaits marks the pods that wait for their dependencies (Pending,
// reason WaitingForDependency, while they are not running as desired),
// for a maintenance window or on a hold (their reason says so, with what
// waits), and unmarks every other pod.
func (s *Syncer) noteWaits(waits, windowWaits map[string]string, plan Plan, held map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ps := range s.pods.states {
		if _, ok := waits[id]; !ok {
			ps.waiting = ""
		}
		ps.held, ps.window = "", ""
	}
	for id, msg := range waits {
		ps := s.podStateLocked(id)
		if ps.waiting != msg {
			s.log.Info("pod waits for its dependencies", "pod", id, "why", msg)
		}
		ps.waiting = msg
	}
	for _, pp := range plan.Pods {
		if pp.Unchanged() {
			continue
		}
		switch {
		case held[pp.ID]:
			s.podStateLocked(pp.ID).held = "held; waiting: " + changesText(pp)
		case windowWaits[pp.ID] != "":
			s.podStateLocked(pp.ID).window = windowWaits[pp.ID] + "; waiting: " + changesText(pp)
		}
	}
}

// markRestore says in the reasons of a restoring pod's changes that they
// roll it back.
func markRestore(pp *PodPlan) {
	for j := range pp.Changes {
		ch := &pp.Changes[j]
		if ch.Action != ActionNone {
			ch.Reasons = append([]string{"rollback to the last ready version"}, ch.Reasons...)
		}
	}
}

// changesText says what a pod plan would change, briefly: "app recreate
// (image a:1 -> a:2)", one change after another.
func changesText(pp PodPlan) string {
	var out []string
	for _, ch := range pp.Changes {
		if ch.Action == ActionNone || ch.Container == hruntime.InfraName {
			continue
		}
		t := ch.Container + " " + string(ch.Action)
		if len(ch.Reasons) > 0 {
			t += " (" + joinReasons(ch.Reasons) + ")"
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return "the pod's network"
	}
	return strings.Join(out, ", ")
}

// notePulls marks the pods whose images are being pulled (Pending,
// reason Pulling) and unmarks every other pod.
func (s *Syncer) notePulls(results []Result) {
	now := s.opts.Clock.Now()
	pulling := map[string]Result{}
	for _, r := range results {
		if r.waiting() {
			pulling[r.ID] = r
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ps := range s.pods.states {
		if _, ok := pulling[id]; !ok {
			ps.pulling = ""
		}
	}
	for id, r := range pulling {
		ps := s.podStateLocked(id)
		action, msg := "pull", "pulling image "+strings.Join(r.Pulling, ", ")
		if len(r.Building) > 0 {
			action, msg = "build", "building image "+strings.Join(r.Building, ", ")
		}
		if ps.pulling != msg {
			ps.lastAction = &LastAction{Action: action, Reason: msg, Time: now}
			s.log.Info("pod waits for its images", "pod", id, "images", r.Pulling, "builds", r.Building)
		}
		ps.building = len(r.Building) > 0
		// A retry after a failure: the pod is pulling again.
		ps.pulling, ps.failReason, ps.failMessage = msg, "", ""
	}
}

// saveRestarts persists the restart counts: a snapshot under mu, the
// write outside it. The caller must not hold mu.
func (s *Syncer) saveRestarts() {
	s.mu.Lock()
	snap := s.pods.restarts.snapshot()
	s.mu.Unlock()
	s.writeRestarts(snap)
}

// writeRestarts writes a snapshot taken under mu; the caller must not hold
// mu.
func (s *Syncer) writeRestarts(snap *statefile.Snapshot) {
	if err := s.pods.restarts.write(snap); err != nil {
		s.log.Warn("save restart counts", "error", err)
	}
}

func eventType(a Action) string {
	switch a {
	case ActionCreate, ActionRecreate:
		return eventlog.Create
	case ActionRestart:
		return eventlog.Restart
	case ActionRemove:
		return eventlog.Remove
	}
	return string(a)
}

// forgetConvergedBackoff ends the backoff of every pod the plan leaves as
// it is: the pod runs as desired (the engine's restart policy brought it
// back), so an earlier failure of hostlet's no longer counts, and the next
// failure waits 10 s again rather than twice the last wait.
func (s *Syncer) forgetConvergedBackoff(plan Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pp := range plan.Pods {
		if s.pods.backoff[pp.ID] != nil && !pp.Remove() && !pp.infraWait && pp.Unchanged() {
			delete(s.pods.backoff, pp.ID)
		}
	}
}

func (s *Syncer) backingOff(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.pods.backoff[id]
	return b != nil && s.opts.Clock.Now().Before(b.next)
}

// handleEvent updates restart counts and recovery marks from an engine
// event and reports whether a sync should follow.
func (s *Syncer) handleEvent(ctx context.Context, e hruntime.Event) bool {
	if e.Action == hruntime.EventStreamBroke {
		s.mu.Lock()
		s.pods.outage.broke(e.Time)
		s.mu.Unlock()
		return false
	}
	pod, slot := e.Labels[hruntime.LabelPod], e.Labels[hruntime.LabelContainer]
	if pod == "" || slot == "" {
		// Not a pod's container (hruntime.Docker delivers no such
		// event): it says nothing about any pod.
		return false
	}
	switch e.Action {
	case "die":
		s.handleDie(pod, slot, e)
		return true
	case "start":
		// A stop of a container that had already exited made no die event.
		s.forgetOwnStopBefore(e.ContainerID, e.Time)
		own := s.takeOwnStart(e.ContainerID)
		if slot != hruntime.InfraName {
			s.handleStart(pod, slot, e, own)
		}
		return true
	case "destroy":
		s.takeOwnStop(e.ContainerID)
		return true
	case "oom", "kill", "stop":
		return true
	}
	if strings.HasPrefix(e.Action, "health_status") {
		// A healthcheck changed state: a pod waiting for its dependencies
		// may go on now.
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, ps := range s.pods.states {
			if ps.waiting != "" {
				return true
			}
		}
	}
	return false
}

// handleDie notes a die event: an infra container's marks the pod's
// network for recovery; an app container's exit code is kept for the
// reason of its restart (counted when it starts again, see handleStart).
func (s *Syncer) handleDie(pod, slot string, e hruntime.Event) {
	// The namespace the pods joining pod's network are in is gone, whoever
	// stopped its holder (hostlet too: a probe's restart keeps the ID).
	s.mu.Lock()
	s.markJoinersLocked(pod, slot)
	s.mu.Unlock()
	if s.takeOwnStop(e.ContainerID) {
		// hostlet stopped it (recreate, remove, probe or network
		// restart): not a crash, and whatever follows is planned.
		return
	}
	if slot == hruntime.InfraName {
		s.mu.Lock()
		s.markRecoverLocked(pod)
		s.mu.Unlock()
		s.log.Warn("infra container died; the pod's network will be recovered", "pod", pod)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.podStateLocked(pod)
	r := ps.runs[slot]
	r.exitID, r.exitCode, r.exitTime = e.ContainerID, e.ExitCode, e.Time
	ps.runs[slot] = r
}

// handleStart counts a start of an app container that hostlet did not
// make (own: see markOwnStart) as a restart by the engine, and a crash,
// when the container had started before: the engine restarted it by
// policy (or someone started it by hand). The first start of a container
// is none; hostlet's own restarts were counted as it made them.
func (s *Syncer) handleStart(pod, slot string, e hruntime.Event, own bool) {
	s.mu.Lock()
	ps := s.podStateLocked(pod)
	lastStart := ps.started[slot]
	if !e.Time.IsZero() {
		ps.started[slot] = e.Time
	}
	restart := ps.engineStart(slot, e.ContainerID) && !own && s.restartsByPolicyLocked(pod, ps, slot, e.ContainerID)
	byEngine := restart && s.engineStoppedLocked(ps, slot, e.ContainerID, lastStart, e.Time)
	reason := ps.exitReason(slot, e.ContainerID)
	if byEngine {
		reason = "the engine restarted"
	}
	if restart && !byEngine {
		ps.crash(slot, e.Time, s.opts.Clock.Now())
	}
	if restart {
		s.pods.restarts.engineRestart(pod, slot, e.ContainerID)
	}
	s.mu.Unlock()
	if restart {
		s.events.Record(eventlog.Event{Time: e.Time, Type: eventlog.Restart, Pod: pod, Container: slot, Reason: reason})
		s.saveRestarts()
	}
}

// restartsByPolicyLocked reports whether the engine restarts container id
// of pod's slot after its last exit: the pod's restart policy restarts it
// (OnFailure: unless its die event said it exited 0). A start the policy
// does not explain is someone's `docker start`: no crash. The caller
// holds mu.
func (s *Syncer) restartsByPolicyLocked(pod string, ps *podState, slot, id string) bool {
	policy := ""
	for _, p := range s.desired.set.Pods {
		if p.Manifest.ID == pod {
			policy = p.Manifest.RestartPolicy
		}
	}
	code := 1 // its exit code when its die event did not come
	if r := ps.runs[slot]; r.exitID == id {
		code = r.exitCode
	}
	return policy != "" && shouldRun(policy, hruntime.Container{State: hruntime.StateExited, ExitCode: code})
}

// ownStart is a mark of markOwnStart: how many starts of the container
// hostlet made whose start events have not come yet, and when it made
// the last.
type ownStart struct {
	n  int
	at time.Time
}

// markOwnStart notes that hostlet is about to start container id, so that
// its start event is not counted as the engine's restart (hostlet counts
// its own restarts as it makes them). unmarkOwnStart takes the mark back
// when the start fails.
func (s *Syncer) markOwnStart(id string) {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, m := range s.pods.ownStarts {
		if now.Sub(m.at) > ownStopTTL {
			delete(s.pods.ownStarts, k)
		}
	}
	m := s.pods.ownStarts[id]
	m.n++
	m.at = now
	s.pods.ownStarts[id] = m
}

func (s *Syncer) unmarkOwnStart(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takeOwnStartLocked(id)
}

// takeOwnStart reports whether a start of id was marked by markOwnStart,
// and takes one such mark.
func (s *Syncer) takeOwnStart(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeOwnStartLocked(id)
}

func (s *Syncer) takeOwnStartLocked(id string) bool {
	m, ok := s.pods.ownStarts[id]
	if !ok {
		return false
	}
	if s.opts.Clock.Now().Sub(m.at) > ownStopTTL {
		// Its start event was missed (queue full, stream broken): this
		// one is a later start's.
		delete(s.pods.ownStarts, id)
		return false
	}
	if m.n--; m.n <= 0 {
		delete(s.pods.ownStarts, id)
	} else {
		s.pods.ownStarts[id] = m
	}
	return true
}

// ownStopTTL bounds how long a mark of markOwnStop waits for its die
// event (a stop of a container that had already exited makes none).
const ownStopTTL = 10 * time.Minute

// markOwnStop notes that hostlet is about to stop or remove container id,
// so that its die event is not taken for a crash: for an infra container
// no network recovery, for an app container no exit code kept for the
// reason of its next restart.
func (s *Syncer) markOwnStop(id string) {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.pods.ownStops {
		if now.Sub(t) > ownStopTTL {
			delete(s.pods.ownStops, k)
		}
	}
	s.pods.ownStops[id] = now
}

// takeOwnStop reports whether id was marked by markOwnStop, and forgets
// the mark.
func (s *Syncer) takeOwnStop(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pods.ownStops[id]
	delete(s.pods.ownStops, id)
	return ok
}

// forgetOwnStopBefore forgets the mark of id if it was made before t.
func (s *Syncer) forgetOwnStopBefore(id string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.pods.ownStops[id]; ok && m.Before(t) {
		delete(s.pods.ownStops, id)
	}
}

// stopMarker is the runtime Apply uses: it marks every container it stops
// or removes (see markOwnStop), and every container it starts (see
// markOwnStart).
type stopMarker struct {
	Runtime
	s *Syncer
}

func (m stopMarker) Stop(ctx context.Context, id string, timeout time.Duration) error {
	m.s.markOwnStop(id)
	return m.Runtime.Stop(ctx, id, timeout)
}

func (m stopMarker) Remove(ctx context.Context, id string) error {
	m.s.markOwnStop(id)
	return m.Runtime.Remove(ctx, id)
}

func (m stopMarker) Start(ctx context.Context, id string) error {
	m.s.markOwnStart(id)
	err := m.Runtime.Start(ctx, id)
	if err != nil {
		m.s.unmarkOwnStart(id)
	}
	return err
}

// onUnhealthy restarts a container (at the pod's address ip) whose
// liveness or startup probe failed failureThreshold times in a row, its
// preStop hook run first, as for every stop hostlet makes.
func (s *Syncer) onUnhealthy(ctx context.Context, pod, slot, id, ip, why string, grace time.Duration) {
	why = textcap.Truncate(why, maxProbeErrorBytes)
	reason := "LivenessProbeFailed"
	if strings.HasPrefix(why, "startup probe") {
		reason = "StartupProbeFailed"
	}
	s.events.Record(eventlog.Event{Type: eventlog.Unhealthy, Pod: pod, Container: slot, Reason: reason, Message: why})
	s.log.Warn("probe failed; restarting", "pod", pod, "container", slot, "reason", why)
	// A held pod is left as it is, its hook not run either.
	if s.rollouts.Held(pod) {
		s.log.Info("liveness probe failed on a held pod; not restarted", "pod", pod, "container", slot)
		return
	}
	// One of restartPolicy OnFailure has its policy cleared before its
	// hook, as in an apply (applier.stop): its exit 0 (on SIGTERM, or the
	// hook's own) must not pass for a completion should the start not
	// follow. Marked, the next pass starts it when wanted, or sets its
	// policy back if it runs (tendPolicyMarks).
	c, inspected := s.inspectForStop(ctx, id)
	created, _ := createdPolicy(c)
	cleared := created == manifest.RestartOnFailure && s.rt.NoRestart(ctx, id) == nil
	// The preStop hook first, outside the sync lock: it may take the
	// whole grace period, and no other pod's sync waits for it.
	left := grace
	if inspected {
		left = preStop(ctx, s.rt, &c, ip, grace, s.log)
	}
	s.syncs.mu.Lock()
	defer s.syncs.mu.Unlock()
	if cleared {
		s.syncs.marks.markStopped(id)
	}
	if ctx.Err() != nil {
		// The probe was stopped (container gone, probe changed, hostlet
		// stopping) while waiting for the sync lock.
		return
	}
	// A pod held meanwhile is left as it is; a hold taken while it is
	// restarted waits for the restart to end.
	if !s.beginApply(pod) {
		s.log.Info("liveness probe failed on a held pod; not restarted (its preStop hook ran)", "pod", pod, "container", slot)
		return
	}
	defer s.endApply(pod)
	if !s.stopStartUnhealthy(ctx, pod, slot, id, left, cleared) {
		s.Trigger()
		return
	}
	// Started again: its startup probe runs again before the others.
	s.work.prober.restarted(id)
	kind, detail, _ := strings.Cut(why, ": ")
	now := s.opts.Clock.Now()
	s.mu.Lock()
	s.pods.restarts.add(pod, slot, 1)
	s.podStateLocked(pod).lastAction = &LastAction{Action: string(ActionRestart), Container: slot, Reason: kind + " failed: " + detail, Time: now}
	snap := s.pods.restarts.snapshot()
	s.mu.Unlock()
	s.writeRestarts(snap)
	s.events.Record(eventlog.Event{Time: now, Type: eventlog.Restart, Pod: pod, Container: slot, Reason: kind + " failed"})
	s.Trigger()
}

// stopStartUnhealthy stops container id of pod's slot within left and
// starts it again, under the sync lock and the pod's apply; cleared says
// its restart policy was cleared (and marked) before. It reports whether
// the container was started again.
func (s *Syncer) stopStartUnhealthy(ctx context.Context, pod, slot, id string, left time.Duration, cleared bool) bool {
	// Marked as hostlet's own: the die event is no crash, the start
	// event no restart of the engine's (this one is counted below).
	rt := stopMarker{Runtime: s.rt, s: s}
	if err := rt.Stop(ctx, id, left); err != nil {
		if cleared && ctx.Err() == nil && rt.RestoreRestart(ctx, id, hruntime.RestartOnFailure) == nil {
			delete(s.syncs.marks.stopped, id) // it runs on, as it was
		}
		s.log.Warn("restart unhealthy container: stop", "pod", pod, "container", slot, "error", err)
		return false
	}
	restored := true
	if cleared {
		// Its policy back while it is stopped (see restartApp).
		if err := rt.RestoreRestart(ctx, id, hruntime.RestartOnFailure); err != nil {
			restored = false
			s.log.Warn("restart unhealthy container: set its restart policy back", "pod", pod, "container", slot, "error", err)
		}
	}
	if err := rt.Start(ctx, id); err != nil {
		// Not restarted: the next sync starts it per the restart policy
		// or its mark (and counts that restart); cleared again, its
		// policy tells the next hostlet it was not done.
		if cleared {
			if cerr := rt.NoRestart(ctx, id); cerr != nil {
				s.log.Warn("restart unhealthy container: clear its restart policy again", "pod", pod, "container", slot, "error", cerr)
			}
		}
		s.log.Warn("restart unhealthy container: start", "pod", pod, "container", slot, "error", err)
		return false
	}
	if cleared && restored {
		// It runs: a stop is its own. A mark whose policy did not go
		// back stays, and the next sync sets it (tendPolicyMarks).
		delete(s.syncs.marks.stopped, id)
	}
	return true
}

// inspectForStop is running container id as a liveness restart stops
// it: its labels (its preStop hook, its restart policy as created);
// false when the inspect failed (no hook is run).
func (s *Syncer) inspectForStop(ctx context.Context, id string) (hruntime.Container, bool) {
	d, err := s.rt.Inspect(ctx, id)
	if err != nil {
		s.log.Warn("preStop hook not run: the container could not be inspected", "container", id, "error", err)
		return hruntime.Container{ID: id, State: hruntime.StateRunning}, false
	}
	return hruntime.Container{ID: id, State: hruntime.StateRunning, Labels: d.Labels}, true
}

// Healthy reports whether the sync loop is alive: a sync finished, or the
// one now running started, within window (counted from start-up before the
// first sync).
func (s *Syncer) Healthy(window time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.loop.started
	if !s.loop.lastSync.Start.IsZero() {
		last = s.loop.lastSync.Start.Add(s.loop.lastSync.Duration)
	}
	if !s.loop.running.IsZero() && s.loop.running.After(last) {
		last = s.loop.running
	}
	return s.opts.Clock.Now().Sub(last) <= window
}

// backoff doubles the wait after each failure of a pod, from 10 s to 5 min.
type backoff struct {
	failures int
	next     time.Time
}

func (b *backoff) delay() time.Duration {
	d := 10 * time.Second
	for i := 1; i < b.failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

func (b *backoff) fail(now time.Time) {
	b.failures++
	b.next = now.Add(b.delay())
}

// fileExists reports whether path names something (that can be seen).
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// unheld are pods without the held ones: a held pod is left exactly as it
// is, no probe restarts it.
func unheld(pods []Pod, held map[string]bool) []Pod {
	if len(held) == 0 {
		return pods
	}
	return slices.DeleteFunc(slices.Clone(pods), func(p Pod) bool { return held[p.Manifest.ID] })
}

// markJoinersLocked marks for network recovery the desired pods that join
// the network of pod (networkOf) when its container in slot, which died,
// holds that network: its infra container, or the one container of a pod
// without one. They restart into its namespace once it runs again (s.mu
// held).
func (s *Syncer) markJoinersLocked(pod, slot string) {
	for _, p := range s.desired.set.Pods {
		if p.Manifest.ID != pod {
			continue
		}
		if slot != hruntime.InfraName && p.Manifest.HasInfra() {
			return
		}
	}
	for _, p := range s.desired.set.Pods {
		if p.Manifest.NetworkOf == pod {
			s.markRecoverLocked(p.Manifest.ID)
			s.log.Warn("the container holding the network this pod joins died; it will rejoin", "pod", p.Manifest.ID, "network of", pod)
		}
	}
}

// joinersStartedEarly are the desired pods with networkOf whose running
// containers started (appStart) before the container holding the other
// pod's network last started (started, by ID): they run in a namespace
// that is gone.
func joinersStartedEarly(actual []hruntime.Container, desired []Pod, started, appStart map[string]time.Time) map[string]bool {
	out := map[string]bool{}
	running := func(id string) bool { _, ok := appStart[id]; return ok }
	for pod, h := range joinedHolders(actual, joinersOf(desired, running)) {
		if started[h.ID].After(appStart[pod]) {
			out[pod] = true
		}
	}
	return out
}
