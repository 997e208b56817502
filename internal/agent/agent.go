package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	gosync "sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/internal/notify"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/secrets"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Options are what the agent needs besides the config.
type Options struct {
	Version string
	Commit  string
	// Binary is the hostlet binary the pause image is built from; "" means
	// os.Executable().
	Binary string
	// InfraCommand overrides the infra container's command (tests use an
	// image whose entrypoint is not a pause process).
	InfraCommand []string
	// Once reads every source once, syncs once and returns.
	Once bool
	// Listening, when set, receives the API's address once it listens.
	Listening func(addr string)
}

// Run runs hostlet until ctx ends (or, with Once, for one sync). Containers
// keep running when it returns.
//
// It builds the agent step by step (engine, pause image, etcd, sources and
// their Merger, syncer, API), then runs it: every goroutine it starts is
// joined before it returns, and what it built is closed after them, in the
// reverse order (syncer, etcd, engine).
func Run(ctx context.Context, cfg *config.Config, opts Options, log *slog.Logger) error {
	// Credentials every user of the host can read stop hostlet before it
	// reads one (the systemd unit restarts it until they are fixed).
	if err := cfg.CheckPrivateFiles(filepath.Join(cfg.StateDir, sources.StateKeyFile), filepath.Join(cfg.StateDir, hsync.EnvKeyFile),
		filepath.Join(cfg.StateDir, hruntime.OwnerKeyFile)); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("create stateDir: %w", err)
	}
	// Keys for SOPS files that others may read, or that the helper cannot
	// parse, stop hostlet too, as does a runtime folder on disk.
	decrypter, err := secrets.Open(ctx, secrets.Config{AgeKeyFile: cfg.Secrets.AgeKeyFile, SSHKeyFile: cfg.Secrets.SSHKeyFile, RuntimeDir: cfg.Secrets.RuntimeDir, Helper: cfg.Secrets.Helper})
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	// The one clock every component reads time from.
	clk := clock.Real{}
	ownerKey, ownerKeyDamaged, err := hruntime.LoadOwnerKey(cfg.StateDir, log, clk.Now())
	if err != nil {
		return err
	}
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, log, hruntime.WithClock(clk), hruntime.WithOwnerKey(ownerKey))
	if err != nil {
		return err
	}
	defer rt.Close()
	a := &agent{cfg: cfg, opts: opts, log: log, clock: clk, rt: rt, ev: eventlog.NewLog(1000).WithClock(clk), stateProblems: &atomicfile.Problems{}, decrypter: decrypter}
	if ownerKeyDamaged != nil {
		a.stateProblems.Report(*ownerKeyDamaged)
	}
	if a.infraImage, err = infraImage(ctx, rt, cfg.Docker.InfraImage, opts.Binary, cfg.Instance); err != nil {
		return err
	}
	if cfg.Docker.InfraImage == "" {
		PrunePauseImages(ctx, rt, cfg.StateDir, a.infraImage, log)
	}
	// The engine's socket (docker.host, else DOCKER_HOST, and the default
	// paths) is refused as a host path unless hostPathAllow lists it.
	a.vopts = configured.ValidateOptions(cfg)
	// Log options given without a driver are the engine's default's.
	a.vopts.Policy.DefaultLogDriver = rt.Engine().LogDriver
	a.vopts.Policy.EnginePlatform = rt.Engine().Platform
	a.vopts.Policy.EnginePodman = rt.Engine().Podman()
	if len(cfg.Etcd.Endpoints) > 0 {
		if a.etcd, err = sources.DialEtcd(cfg.Etcd.Endpoints); err != nil {
			return err
		}
		defer a.etcd.Close()
	}
	if err := a.buildSources(); err != nil {
		return err
	}
	if err := a.buildSyncer(); err != nil {
		return err
	}
	// Joins the probe workers and pulls a SyncOnce (Once) left running;
	// Run joins its own.
	defer a.syncer.Close()
	if err := a.buildAPI(); err != nil {
		return err
	}
	return a.run(ctx)
}

// agent is what Run builds, in the order it builds it.
type agent struct {
	cfg  *config.Config
	opts Options
	log  *slog.Logger

	clock      clock.Clock // the one clock, given to every component
	rt         *hruntime.Docker
	ev         *eventlog.Log
	infraImage string
	vopts      validate.Options
	etcd       *clientv3.Client // nil without etcd.endpoints
	// decrypter decrypts the SOPS files of the sources; nil without
	// secrets keys.
	decrypter *secrets.Decrypter

	srcs   []sources.Source
	push   *sources.Push // nil without a push source
	merger *sources.Merger
	// State files that could not be read or written, for /status and
	// /metrics.
	stateProblems *atomicfile.Problems

	syncer *hsync.Syncer
	token  string
	srv    *api.Server
	met    *metrics.Metrics
	rep    *reporter.Reporter // nil without etcd

	notifier *notify.Notifier // nil without notify targets
}

// infraImage is docker.infraImage, else the pause image built from the
// hostlet binary (binary, else os.Executable()).
func infraImage(ctx context.Context, rt imageLoader, configured, binary, instance string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return "", fmt.Errorf("find the hostlet binary for the pause image: %w", err)
		}
	}
	return PauseImage(ctx, rt, binary, instance)
}

// buildSources makes the configured sources (sources/configured), finds
// the push source among them (its handler serves POST /manifests) and the
// Merger of their sets.
func (a *agent) buildSources() error {
	srcs, err := configured.All(a.cfg, configured.Deps{StateDir: a.cfg.StateDir, Etcd: a.etcd, Validate: a.vopts, Log: a.log, Clock: a.clock, Compose: configured.Renderer(a.cfg)})
	if err != nil {
		return err
	}
	a.srcs = srcs
	var infos []sources.SourceInfo
	for _, s := range srcs {
		if p, ok := s.(*sources.Push); ok {
			a.push = p
		}
		infos = append(infos, sources.SourceInfo{Name: s.Name(), Type: s.Type()})
	}
	a.merger, err = sources.NewMerger(infos, sources.MergeOptions{AllowEmpty: a.cfg.Sync.AllowEmpty, Validate: a.vopts, StateDir: a.cfg.StateDir, Problems: a.stateProblems, Clock: a.clock,
		Secrets: a.tokenizeSecrets}, a.log)
	return err
}

// tokenizeSecrets readies the manifests of an update that carry encrypted
// files (secrets.Tokenize), with the syncer's keyed hash. Sources deliver
// once the syncer is built.
func (a *agent) tokenizeSecrets(ms []manifest.Sourced) bool {
	return secrets.Tokenize(context.Background(), a.decrypter, ms, a.syncer.EnvHasher().SecretMAC)
}

// revealSecrets decrypts a pod's encrypted files for the syncer
// (secrets.Reveal).
func (a *agent) revealSecrets(ctx context.Context, source string, sealed []*manifest.Sealed) (map[string][]byte, error) {
	return secrets.Reveal(ctx, a.decrypter, source, sealed, a.syncer.EnvHasher().SecretMAC)
}

// buildSyncer makes the reconciler. After each sync it counts the sync in
// the metrics and triggers a status report (both built later, before any
// sync runs).
func (a *agent) buildSyncer() error {
	cfg := a.cfg
	windows, err := windowFunc(cfg)
	if err != nil {
		return err
	}
	syncer, err := hsync.New(a.rt, hsync.Options{
		OnSync: func(d time.Duration, err error) {
			a.met.SyncDone(d, err)
			if a.rep != nil {
				a.rep.Trigger()
			}
		},
		Instance: cfg.Instance, InfraImage: a.infraImage, InfraCommand: a.opts.InfraCommand,
		OnBuild:  func(d time.Duration, err error) { a.met.BuildDone(d, err) },
		Interval: cfg.Sync.Interval, Concurrency: cfg.Sync.Concurrency, PullTimeout: cfg.Sync.PullTimeout, Prune: cfg.Sync.Prune, StateDir: cfg.StateDir,
		BuildConcurrency: cfg.Sync.BuildConcurrency, BuildTimeout: cfg.Sync.BuildTimeout,
		HostPaths: a.vopts, Clock: a.clock, Window: windows, DataDir: a.cfg.Compose.DataDir,
		Secrets: a.revealSecrets, SecretFiles: a.secretFiles(),
	}, a.log, a.ev)
	if err != nil {
		return err
	}
	a.syncer = syncer
	syncer.TrackStateFiles(a.stateProblems)
	return nil
}

// secretFiles is the store of the decrypted files containers mount: the
// instance's folder of secrets.runtimeDir (a tmpfs; two instances on one
// host never prune each other's); nil without keys.
func (a *agent) secretFiles() hsync.FileStore {
	if a.decrypter == nil {
		return nil
	}
	return filestore.New(filepath.Join(a.cfg.Secrets.RuntimeDir, a.cfg.Instance))
}

// buildAPI makes the HTTP API, its metrics and its routes, and the etcd
// reporter of the same status document.
func (a *agent) buildAPI() error {
	cfg := a.cfg
	token, err := cfg.Token()
	if err != nil {
		return err
	}
	a.token = token
	sourceStates := func() []sources.Status { return a.merger.State().Sources }
	a.srv = api.New(api.Options{
		Hostname: cfg.Hostname, Labels: cfg.Labels, Version: a.opts.Version, Token: token, Loopback: api.IsLoopback(cfg.Listen),
		HealthWindow: max(3*cfg.Sync.Interval, 60*time.Second), Machine: machine(), Engine: a.engine(),
		EnvHasher: a.syncer.EnvHasher(), StateErrors: a.stateProblems.List, Clock: a.clock,
		Overdue: a.overdue,
	}, a.syncer, sourceStates, a.ev, a.log)
	a.met = metrics.New(a.opts.Version, a.opts.Commit, a.syncer.Report, sourceStates)
	a.met.StateFiles(a.stateProblems)
	a.met.EngineEventsDropped(a.syncer.EventsDropped)
	a.met.UnprovenContainers(a.rt.Unproven, a.rt.UnprovenEvents)
	a.met.PodFailures(a.syncer.Failures)
	a.met.Rollbacks(a.syncer.Rollbacks)
	if err := a.buildNotifier(); err != nil {
		return err
	}
	a.routes()
	if a.etcd != nil {
		a.rep = reporter.New(a.etcd, reporter.Options{
			Prefix: cfg.Etcd.Prefix, Hostname: cfg.Hostname, Interval: cfg.Sync.Interval,
			Document: func() any { return a.srv.Document() }, Events: a.ev, Clock: a.clock,
		}, a.log)
	}
	return nil
}

// routes adds to the API what the agent serves besides the status:
// metrics, stats, pods, POST /sync, the pods' holds and the push
// source's POST /manifests.
func (a *agent) routes() {
	srv := a.srv
	srv.HandleRead("GET /metrics", a.met.Handler())
	srv.HandleStats(statsReaders(a.rt, a.cfg.Stats))
	srv.HandlePods(a.rt)
	srv.HandleSync(func(force bool) {
		if force {
			a.syncer.Force()
		}
		for _, s := range a.srcs {
			if t, ok := s.(interface{ Trigger() }); ok {
				t.Trigger()
			}
		}
		a.syncer.Trigger()
	})
	srv.HandleHolds(a.syncer)
	if a.push != nil {
		// Nothing pushed yet (and nothing persisted) is an empty set, not a
		// source that never answered.
		a.merger.MarkDelivered(a.push.Name())
		if a.token != "" {
			srv.Handle("POST /manifests", a.push.Handler(srv.Authorized))
		} else {
			a.log.Warn("push source configured without tokenFile: POST /manifests is off", "source", a.push.Name())
		}
	}
}

// run starts the agent's goroutines (reporter, HTTP API, sources) and
// syncs: once (Options.Once) or until ctx ends. Every goroutine it starts
// ends with its context and is joined before it returns, also when it
// returns early (the listen address is taken).
func (a *agent) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	// Cancel first, then wait.
	defer func() {
		cancel()
		wg.Wait()
	}()

	a.startNotifier(ctx, &wg)
	if a.rep != nil && !a.opts.Once {
		wg.Go(func() { a.rep.Run(ctx) })
	}
	if a.cfg.Listen != "" && !a.opts.Once {
		if err := a.serve(ctx, &wg); err != nil {
			return err
		}
	}
	updates := make(chan sources.Update)
	for _, s := range a.srcs {
		wg.Go(func() { s.Run(ctx, updates) })
	}
	if a.opts.Once {
		return a.syncOnce(ctx, updates)
	}
	return a.syncUntilDone(ctx, &wg, updates)
}

// serve listens on cfg.Listen and serves the API on wg until ctx ends,
// then shuts the server down (5 s for the requests in flight).
func (a *agent) serve(ctx context.Context, wg *gosync.WaitGroup) error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	hs := a.srv.HTTPServer(a.cfg.Listen)
	wg.Go(func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("HTTP API stopped", "error", err)
		}
	})
	wg.Go(func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
	})
	a.log.Info("HTTP API listening", "addr", ln.Addr().String())
	if a.opts.Listening != nil {
		a.opts.Listening(ln.Addr().String())
	}
	return nil
}

// syncOnce waits for one update of every source that reads (a push source
// delivers when pushed to, not by reading), syncs once and reports once.
func (a *agent) syncOnce(ctx context.Context, updates <-chan sources.Update) error {
	pending := map[string]bool{}
	for _, s := range a.srcs {
		if a.push == nil || s.Name() != a.push.Name() {
			pending[s.Name()] = true
		}
	}
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case u := <-updates:
			a.merger.Apply(u)
			delete(pending, u.Source)
		}
	}
	a.syncer.SetDesired(toDesired(a.merger.State()))
	err := a.syncer.SyncOnce(ctx)
	if a.rep != nil {
		if rerr := a.rep.ReportOnce(ctx); rerr != nil {
			a.log.Warn("report status", "error", rerr)
		}
	}
	return err
}

// syncUntilDone runs the update loop (updates → Merger → syncer) on wg and
// the sync loop on the caller's goroutine until ctx ends.
func (a *agent) syncUntilDone(ctx context.Context, wg *gosync.WaitGroup, updates <-chan sources.Update) error {
	a.log.Info("hostlet running", "instance", a.cfg.Instance, "hostname", a.cfg.Hostname, "sources", len(a.srcs), "infraImage", a.infraImage)
	// Sources with a persisted set are ready at once: start from it (and
	// record what is wrong with it already: an unreadable saved set, a
	// rejected manifest).
	first := a.merger.State()
	srcErrs, rejections := map[string]string{}, map[string]string{}
	recordSourceErrors(a.ev, first, srcErrs)
	recordRejections(a.ev, first, rejections)
	hold := newStartupHold(a.cfg.Sources, a.clock.Now())
	a.syncer.SetDesired(hold.desired(first, a.clock.Now()))
	wg.Go(func() {
		// holdTimer fires when a source's start-up wait ends (at once
		// when none is pending: the hold then ends for good).
		holdTimer := a.clock.NewTimer(max(hold.wait(a.clock.Now()), time.Nanosecond))
		defer holdTimer.Stop()
		for {
			var u sources.Update
			select {
			case <-ctx.Done():
				return
			case <-holdTimer.C():
				a.syncer.SetDesired(hold.desired(a.merger.State(), a.clock.Now()))
				if d := hold.wait(a.clock.Now()); d > 0 {
					holdTimer.Reset(d)
				}
				continue
			case u = <-updates:
				a.met.SourceUpdate(u)
			case u = <-a.merger.Retries():
				// Refused while the source's checks were overdue:
				// checked again now that they have ended.
			}
			if a.merger.Apply(u) {
				st := a.merger.State()
				recordSourceErrors(a.ev, st, srcErrs)
				recordRejections(a.ev, st, rejections)
				a.syncer.SetDesired(hold.desired(st, a.clock.Now()))
			}
		}
	})
	err := a.syncer.Run(ctx)
	a.log.Info("hostlet stopping; containers keep running")
	return err
}

// recordSourceErrors records a source-error event for every source whose
// error is new since the last call (last holds each source's error then):
// the same failure repeated is one event; failing again after a recovery is
// another.
func recordSourceErrors(ev *eventlog.Log, st sources.State, last map[string]string) {
	for _, s := range st.Sources {
		switch {
		case s.Error != "" && s.Error != last[s.Name]:
			ev.Record(eventlog.Event{Type: eventlog.SourceError, Reason: "source " + s.Name, Message: s.Error})
		case s.Error == "" && last[s.Name] != "":
			ev.Record(eventlog.Event{Type: eventlog.Recovered, Reason: "source " + s.Name + " reads again"})
		}
		last[s.Name] = s.Error
	}
}

// recordRejections records a rejected event for every manifest the merge
// rejects that it did not reject at the last call, or now rejects for
// other reasons (last holds each rejection's reasons then, by source and
// id): a rejection that stands is one event, not one per sync.
func recordRejections(ev *eventlog.Log, st sources.State, last map[string]string) {
	now := make(map[string]string, len(st.Rejected))
	for _, rj := range st.Rejected {
		k := rj.Source + "\x00" + rj.ID
		why := strings.Join(rj.Reasons, "; ")
		now[k] = why
		if old, seen := last[k]; !seen || old != why {
			ev.Record(eventlog.Event{Type: eventlog.Rejected, Pod: rj.ID, Reason: "source " + rj.Source, Message: why})
		}
	}
	clear(last)
	maps.Copy(last, now)
}

func toDesired(st sources.State) hsync.Desired {
	d := hsync.Desired{Rejected: st.Rejected, Ready: st.Ready}
	for _, e := range st.Accepted {
		d.Pods = append(d.Pods, hsync.NewSourcedPod(e.Sourced, e.Revision))
	}
	return d
}

// machine reads the host's cores and memory.
func machine() api.Machine {
	total, _ := api.ReadMeminfo()
	return api.Machine{Cores: goruntime.NumCPU(), MemoryBytes: total}
}

// windowFunc is the syncer's view of the host's maintenance windows: nil
// (always open) without sync.windows.
func windowFunc(cfg *config.Config) (func(time.Time) (bool, time.Time, time.Time), error) {
	if len(cfg.Sync.Windows) == 0 {
		return nil, nil
	}
	w, err := cfg.Windows()
	if err != nil {
		return nil, err
	}
	return func(t time.Time) (bool, time.Time, time.Time) {
		st := w.State(t)
		return st.Open, st.Next, st.Closes
	}, nil
}

// engine is the engine the agent drives, for the status document.
func (a *agent) engine() *hruntime.Engine {
	e := a.rt.Engine()
	return &e
}
