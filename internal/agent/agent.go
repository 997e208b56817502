package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strings"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/events"
	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/internal/reporter"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
	clientv3 "go.etcd.io/etcd/client/v3"
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
func Run(ctx context.Context, cfg *config.Config, opts Options, log *slog.Logger) error {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("create stateDir: %w", err)
	}
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, log)
	if err != nil {
		return err
	}
	defer rt.Close()

	infraImage := cfg.Docker.InfraImage
	if infraImage == "" {
		bin := opts.Binary
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return fmt.Errorf("find the hostlet binary for the pause image: %w", err)
			}
		}
		if infraImage, err = PauseImage(ctx, rt, bin); err != nil {
			return err
		}
	}

	ev := events.NewLog(1000)
	// The engine's socket (docker.host, else DOCKER_HOST, and the default
	// paths) is refused as a host path unless hostPathAllow lists it.
	vopts := validate.Options{HostPathAllow: cfg.HostPathAllow, DockerHost: cmp.Or(cfg.Docker.Host, os.Getenv("DOCKER_HOST"))}
	var etcd *clientv3.Client
	if len(cfg.Etcd.Endpoints) > 0 {
		if etcd, err = sources.DialEtcd(cfg.Etcd.Endpoints); err != nil {
			return err
		}
		defer etcd.Close()
	}
	srcs, push, err := buildSources(cfg, vopts, etcd, log)
	if err != nil {
		return err
	}
	var infos []sources.SourceInfo
	for _, s := range srcs {
		infos = append(infos, sources.SourceInfo{Name: s.Name(), Type: s.Type()})
	}
	// State files that could not be read or written, for /status and
	// /metrics.
	stateProblems := &atomicfile.Problems{}
	merger, err := sources.NewMerger(infos, sources.MergeOptions{AllowEmpty: cfg.Sync.AllowEmpty, Validate: vopts, StateDir: cfg.StateDir, Problems: stateProblems}, log)
	if err != nil {
		return err
	}
	var (
		met *metrics.Metrics
		rep *reporter.Reporter
	)
	syncer, err := hsync.New(rt, hsync.Options{
		OnSync: func(d time.Duration, err error) {
			met.SyncDone(d, err)
			if rep != nil {
				rep.Trigger()
			}
		},
		Instance: cfg.Instance, InfraImage: infraImage, InfraCommand: opts.InfraCommand,
		Interval: cfg.Sync.Interval, Concurrency: cfg.Sync.Concurrency, PullTimeout: cfg.Sync.PullTimeout, Prune: cfg.Sync.Prune, StateDir: cfg.StateDir,
		HostPaths: vopts,
	}, log, ev)
	if err != nil {
		return err
	}
	// Joins the probe workers and pulls a SyncOnce (Once) left running;
	// Run joins its own.
	defer syncer.Close()
	syncer.TrackStateFiles(stateProblems)

	token, err := cfg.Token()
	if err != nil {
		return err
	}
	srv := api.New(api.Options{
		Hostname: cfg.Hostname, Version: opts.Version, Token: token, Loopback: api.IsLoopback(cfg.Listen),
		HealthWindow: max(3*cfg.Sync.Interval, 60*time.Second), Machine: machine(),
		EnvHasher: syncer.EnvHasher(), StateErrors: stateProblems.List,
	}, syncer, func() []sources.Status { return merger.State().Sources }, ev, log)
	met = metrics.New(opts.Version, opts.Commit, syncer.Report, func() []sources.Status { return merger.State().Sources })
	met.StateFiles(stateProblems)
	met.EngineEventsDropped(syncer.EventsDropped)
	srv.HandleRead("GET /metrics", met.Handler())
	srv.HandleStats(statsReaders(rt, cfg.Stats))
	srv.HandlePods(rt)
	srv.HandleSync(func() {
		for _, s := range srcs {
			if t, ok := s.(interface{ Trigger() }); ok {
				t.Trigger()
			}
		}
		syncer.Trigger()
	})
	if push != nil {
		// Nothing pushed yet (and nothing persisted) is an empty set, not a
		// source that never answered.
		merger.MarkDelivered(push.Name())
		if token != "" {
			srv.Handle("POST /manifests", push.Handler(srv.Authorized))
		} else {
			log.Warn("push source configured without tokenFile: POST /manifests is off", "source", push.Name())
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	// Cancel first, then wait: every goroutine below ends with ctx, also
	// when Run returns early (the listen address is taken).
	defer func() {
		cancel()
		wg.Wait()
	}()

	if etcd != nil {
		rep = reporter.New(etcd, reporter.Options{
			Prefix: cfg.Etcd.Prefix, Hostname: cfg.Hostname, Interval: cfg.Sync.Interval,
			Document: func() any { return srv.Document() }, Events: ev,
		}, log)
		if !opts.Once {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep.Run(ctx)
			}()
		}
	}

	if cfg.Listen != "" && !opts.Once {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
		hs := srv.HTTPServer(cfg.Listen)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("HTTP API stopped", "error", err)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = hs.Shutdown(sctx)
		}()
		log.Info("HTTP API listening", "addr", ln.Addr().String())
		if opts.Listening != nil {
			opts.Listening(ln.Addr().String())
		}
	}

	updates := make(chan sources.Update)
	for _, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Run(ctx, updates)
		}()
	}
	desired := func() hsync.Desired { return toDesired(merger.State()) }

	if opts.Once {
		pending := map[string]bool{}
		for _, s := range srcs {
			// A push source delivers when pushed to, not by reading.
			if push == nil || s.Name() != push.Name() {
				pending[s.Name()] = true
			}
		}
		for len(pending) > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case u := <-updates:
				merger.Apply(u)
				delete(pending, u.Source)
			}
		}
		syncer.SetDesired(desired())
		err := syncer.SyncOnce(ctx)
		if rep != nil {
			if rerr := rep.ReportOnce(ctx); rerr != nil {
				log.Warn("report status", "error", rerr)
			}
		}
		cancel()
		return err
	}

	log.Info("hostlet running", "instance", cfg.Instance, "hostname", cfg.Hostname, "sources", len(srcs), "infraImage", infraImage)
	// Sources with a persisted set are ready at once: start from it (and
	// record what is wrong with it already: an unreadable saved set, a
	// rejected manifest).
	first := merger.State()
	srcErrs, rejections := map[string]string{}, map[string]string{}
	recordSourceErrors(ev, first, srcErrs)
	recordRejections(ev, first, rejections)
	syncer.SetDesired(toDesired(first))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-updates:
				met.SourceUpdate(u)
				if merger.Apply(u) {
					st := merger.State()
					recordSourceErrors(ev, st, srcErrs)
					recordRejections(ev, st, rejections)
					syncer.SetDesired(toDesired(st))
				}
			}
		}
	}()
	err = syncer.Run(ctx)
	log.Info("hostlet stopping; containers keep running")
	return err
}

// recordSourceErrors records a source-error event for every source whose
// error is new since the last call (last holds each source's error then):
// the same failure repeated is one event; failing again after a recovery is
// another.
func recordSourceErrors(ev *events.Log, st sources.State, last map[string]string) {
	for _, s := range st.Sources {
		if s.Error != "" && s.Error != last[s.Name] {
			ev.Record(events.Event{Type: events.SourceError, Reason: "source " + s.Name, Message: s.Error})
		}
		last[s.Name] = s.Error
	}
}

// recordRejections records a rejected event for every manifest the merge
// rejects that it did not reject at the last call, or now rejects for
// other reasons (last holds each rejection's reasons then, by source and
// id): a rejection that stands is one event, not one per sync.
func recordRejections(ev *events.Log, st sources.State, last map[string]string) {
	now := make(map[string]string, len(st.Rejected))
	for _, rj := range st.Rejected {
		k := rj.Source + "\x00" + rj.ID
		why := strings.Join(rj.Reasons, "; ")
		now[k] = why
		if old, seen := last[k]; !seen || old != why {
			ev.Record(events.Event{Type: events.Rejected, Pod: rj.ID, Reason: "source " + rj.Source, Message: why})
		}
	}
	clear(last)
	maps.Copy(last, now)
}

func toDesired(st sources.State) hsync.Desired {
	d := hsync.Desired{Rejected: st.Rejected, Ready: st.Ready}
	for _, e := range st.Accepted {
		d.Pods = append(d.Pods, hsync.NewPod(e.Manifest, e.Origin.Source, e.Revision))
	}
	return d
}

// buildSources makes the configured sources (sources/configured) and
// returns the push source among them, if any (its handler serves POST
// /manifests).
func buildSources(cfg *config.Config, vopts validate.Options, etcd sources.EtcdKV, log *slog.Logger) ([]sources.Source, *sources.Push, error) {
	out, err := configured.All(cfg, configured.Deps{StateDir: cfg.StateDir, Etcd: etcd, Validate: vopts, Log: log})
	if err != nil {
		return nil, nil, err
	}
	var push *sources.Push
	for _, s := range out {
		if p, ok := s.(*sources.Push); ok {
			push = p
		}
	}
	return out, push, nil
}

// machine reads the host's cores and memory.
func machine() api.Machine {
	total, _ := api.ReadMeminfo()
	return api.Machine{Cores: goruntime.NumCPU(), MemoryBytes: total}
}
