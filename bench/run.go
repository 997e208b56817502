package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"
)

// env is one run of the driver.
type env struct {
	o     *options
	runID string
	dir   string
	cli   *client.Client
	image string
	// pause is the run's pause image (loadPauseImage).
	pause   string
	bin     string
	git     *gitServer
	gitEnv  []string
	token   string
	tokFile string
	project string
	repos   map[string]*repo
	res     *results
	// calls is the timing proxy the hostlet block running now talks to
	// the engine through (-profile-calls); nil without it.
	calls *countingProxy
}

func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "hb" + time.Now().UTC().Format("0102t1504") + hex.EncodeToString(b)
}

func run(ctx context.Context, o *options) (err error) {
	e := &env{o: o, runID: newRunID(), repos: map[string]*repo{}}
	e.image = imageRepo + ":" + e.runID
	e.pause = pauseRepo + ":" + e.runID
	e.project = composeProjectPrefix + e.runID
	e.res = newResults(o, e.runID)
	logf("run %s: N=%v shapes=%v floor at %v pods at once, reps=%d variants=%v", e.runID, o.ns, o.shapes, o.floorPar, o.reps, selected(o))

	if e.dir, err = os.MkdirTemp("", "hostlet-bench-"+e.runID+"-"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.dir, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return errors.Join(err, os.RemoveAll(e.dir))
	}
	if e.cli, err = newDockerClient(); err != nil {
		return errors.Join(err, os.RemoveAll(e.dir))
	}
	// Everything below is undone here, on success, error or Ctrl-C.
	defer func() {
		if cerr := e.cleanup(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()

	if err := e.setup(ctx); err != nil {
		return err
	}
	if err := e.machineInfo(ctx); err != nil {
		return err
	}

	if o.waitQuiet {
		if err := e.waitQuiet(ctx); err != nil {
			return err
		}
	}
	e.res.Load.Start, _ = loadAvg()
	e.res.Started = time.Now().UTC()
	// A run that fails half-way still writes what it measured.
	defer func() { e.writePartial(err) }()

	if err := e.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := e.timedBlocks(ctx); err != nil {
		return err
	}
	if o.variants[vWebhook] || o.variants[vPoll] {
		if err := e.idlePhase(ctx, o.idlePods); err != nil {
			return fmt.Errorf("idle phase: %w", err)
		}
	}
	return e.finish()
}

// waitQuiet waits until the machine is quiet (or -quiet-max passed) and
// records how that went.
func (e *env) waitQuiet(ctx context.Context) error {
	o := e.o
	logf("waiting for the machine to be quiet (1-min load < %.2f for %s, at most %s)", o.quietLoad, o.quietFor, o.quietMax)
	quiet, samples, err := waitQuiet(ctx, o.quietLoad, o.quietFor, o.quietMax)
	if err != nil {
		return err
	}
	e.res.Load.Quiet = &quiet
	e.res.Load.QuietSamples = samples
	if !quiet {
		logf("the machine never got quiet: measuring anyway")
	}
	return nil
}

// timedBlocks runs every timed block: per N and shape, each repetition's
// blocks in its order (blockOrder), each once the machine has settled (settle:
// its CPUs 85% idle for 2 s, at most 60 s) after the one before.
func (e *env) timedBlocks(ctx context.Context) error {
	o := e.o
	for _, n := range o.ns {
		for _, shape := range o.shapes {
			blocks := blocksOf(o, shape, n)
			for rep := range o.reps {
				for _, b := range blockOrder(blocks, rep) {
					waited, err := settle(ctx, 0.85, time.Minute)
					if err != nil {
						return err
					}
					if waited > 3*time.Second {
						logf("waited %.0fs for the engine to settle", waited.Seconds())
					}
					if err := e.block(ctx, b, shape, n, rep); err != nil {
						return fmt.Errorf("%s, %s pods, N=%d, rep %d: %w", b, shape, n, rep+1, err)
					}
				}
			}
		}
	}
	return nil
}

// finish summarizes the run, prints its tables and writes its results
// (-out); failed checks are its error.
func (e *env) finish() error {
	e.res.Load.End, _ = loadAvg()
	e.res.Finished = time.Now().UTC()
	e.res.summarize()
	fmt.Println(e.res.markdown())
	if e.o.out != "" {
		if err := e.res.write(e.o.out); err != nil {
			return err
		}
		logf("results written to %s", e.o.out)
	}
	if bad := e.res.failedChecks(); len(bad) > 0 {
		return fmt.Errorf("checks failed: %s", strings.Join(bad, "; "))
	}
	return nil
}

// writePartial writes what a run that failed with err measured (to -out's
// .partial.json), if it measured anything.
func (e *env) writePartial(err error) {
	if err == nil || e.o.out == "" || len(e.res.Runs) == 0 {
		return
	}
	e.res.Error = err.Error()
	e.res.Load.End, _ = loadAvg()
	e.res.Finished = time.Now().UTC()
	e.res.summarize()
	partial := strings.TrimSuffix(e.o.out, ".json") + ".partial.json"
	if werr := e.res.write(partial); werr == nil {
		logf("partial results written to %s", partial)
	}
}

func selected(o *options) []string {
	var out []string
	for _, v := range allVariants {
		if o.variants[v] {
			out = append(out, v)
		}
	}
	return out
}

// blockSpec is one timed block of a repetition: a variant and, for the
// floor, how many pods it works on at once.
type blockSpec struct {
	variant string
	workers int
}

func (b blockSpec) String() string {
	if isFloor(b.variant) {
		return fmt.Sprintf("%s×%d", b.variant, b.workers)
	}
	return b.variant
}

// short names a floor block in a few bytes ("flate4"), for paths.
func (b blockSpec) short() string {
	code := map[string]string{vFloor: "f", vFloorNet: "fnet", vFloorLateRm: "flate"}[b.variant]
	return fmt.Sprintf("%s%d", cmp.Or(code, b.variant), b.workers)
}

// blocksOf lists the blocks of one repetition of n pods of shape: the
// floor once per distinct min(p, n) of -floor-par (more workers than pods
// run as one per pod), then the other selected variants; the compose loop
// runs single pods only.
func blocksOf(o *options, shape string, n int) []blockSpec {
	var out []blockSpec
	for _, v := range selected(o) {
		switch {
		case (v == vCompose || v == vHostletCompose || v == vComposeUp || v == vFloorNet) && shape != shapeSingle:
		case isFloor(v):
			for _, w := range floorWorkers(o.floorPar, n) {
				out = append(out, blockSpec{v, w})
			}
		default:
			out = append(out, blockSpec{variant: v})
		}
	}
	return out
}

// blockOrder is the order of the blocks in repetition rep: the engine
// slows down over a run (Docker 28 here: the floor's create at N = 50
// from 4 s to 6–8 s within 10 minutes), so each pair of repetitions runs
// one order and then its reverse, and every variant's mean place, and so
// its median of two, is the same; each pair starts at another block
// (rotate).
func blockOrder[T any](vs []T, rep int) []T {
	out := rotate(vs, rep/2)
	if rep%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// rotate starts the order at a different block in each repetition, so no
// variant always runs right after the same other one.
func rotate[T any](vs []T, k int) []T {
	if len(vs) == 0 {
		return vs
	}
	k %= len(vs)
	return append(slices.Clone(vs[k:]), vs[:k]...)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// setup builds the binaries and the image, starts the git server and makes
// one repository per variant.
func (e *env) setup(ctx context.Context) error {
	logf("building the demo image %s", e.image)
	if err := loadDemoImage(ctx, e.cli, e.dir, e.image); err != nil {
		return err
	}
	e.bin = filepath.Join(e.dir, "hostlet")
	if e.o.hostletBin != "" {
		if err := copyFresh(e.o.hostletBin, e.bin); err != nil {
			return err
		}
	} else {
		logf("building hostlet (CGO_ENABLED=0)")
		if err := goBuild(ctx, "./cmd/hostlet", e.bin); err != nil {
			return err
		}
	}
	// hostlet renders Compose files with the helper beside it.
	if err := goBuild(ctx, "./cmd/hostlet-compose", filepath.Join(filepath.Dir(e.bin), "hostlet-compose")); err != nil {
		return err
	}
	logf("loading the pause image %s", e.pause)
	if err := loadPauseImage(ctx, e.cli, e.bin, e.pause); err != nil {
		return err
	}
	e.token = e.runID + "-token"
	e.tokFile = filepath.Join(e.dir, "token")
	if err := os.WriteFile(e.tokFile, []byte(e.token+"\n"), 0o600); err != nil {
		return err
	}
	home := filepath.Join(e.dir, "home")
	gitRoot := filepath.Join(e.dir, "git")
	for _, d := range []string{home, gitRoot, filepath.Join(e.dir, "work"), filepath.Join(e.dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	e.gitEnv = gitEnv(home)
	var err error
	if e.git, err = startGitServer(gitRoot, home); err != nil {
		return err
	}
	for _, name := range []string{vWebhook, vPoll, "idle"} {
		if e.repos[name], err = newRepo(ctx, e.git, filepath.Join(e.dir, "work"), name, e.gitEnv, podFiles(e.runID, e.image, e.o.grace, shapeSingle, nil, "")); err != nil {
			return err
		}
	}
	if e.o.variants[vHostletCompose] {
		if e.repos[vHostletCompose], err = newRepo(ctx, e.git, filepath.Join(e.dir, "work"), vHostletCompose, e.gitEnv, hostletComposeFiles(e.runID, e.image, e.o.grace, nil, "")); err != nil {
			return err
		}
	}
	if e.o.variants[vCompose] || e.o.variants[vComposeUp] {
		if _, err := exec.LookPath("docker-compose"); err != nil {
			return errors.New("docker-compose not found (apt-get install -y docker-compose)")
		}
		if e.repos[vCompose], err = newRepo(ctx, e.git, filepath.Join(e.dir, "work"), vCompose, e.gitEnv, composeFile(e.runID, e.image, e.o.grace, nil, "")); err != nil {
			return err
		}
	}
	return nil
}

// warmUp creates and removes one pod of each shape untimed, so the first
// timed step does not pay for the images' first use.
func (e *env) warmUp(ctx context.Context) error {
	for _, shape := range e.o.shapes {
		ports, err := freePorts(portsPerPod(shape))
		if err != nil {
			return err
		}
		f := newFloor(dockerEngine{e.cli}, e.runID, e.image, e.pause, shape, e.o.grace, 1, ports, "warmup-"+shape+"-"+e.runID)
		if err := f.create(ctx, "warm"); err != nil {
			return err
		}
		if _, err := waitAnswer(ctx, ports, "warm", time.Minute); err != nil {
			return err
		}
		if err := f.remove(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitProjectNetworkGone waits, after a hostlet-compose block's steps,
// until hostlet has removed its project's network. Not timed (Compose's
// `down` is timed to its containers' removal too); a hostlet stopped
// before it removes the network leaves it to the next block's instance,
// which refuses to join a network another instance made.
func (e *env) waitProjectNetworkGone(ctx context.Context, h *hostlet, variant string) error {
	if variant != vHostletCompose {
		return nil
	}
	if err := waitNetworkGone(ctx, e.cli, e.hostletProjectNetwork(), time.Minute); err != nil {
		return fmt.Errorf("%w; hostlet's log ends:\n%s", err, h.tail(20))
	}
	return nil
}

// hostletProjectNetwork is the network of the Compose project hostlet
// reads in the hostlet-compose blocks.
func (e *env) hostletProjectNetwork() string { return "hc-" + e.runID + "_default" }

// cleanup stops every process the run started and removes every
// container, network, volume, image and folder it made.
func (e *env) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stopAllProcs()
	var errs []error
	if e.cli != nil {
		labels := []string{runLabel + "=" + e.runID, "com.docker.compose.project=" + e.project, "com.docker.compose.project=" + e.project + "-up"}
		if err := removeByLabel(ctx, e.cli, labels...); err != nil {
			errs = append(errs, err)
		}
		// hostlet removes the network of its Compose project with the
		// project; one left by a failed block goes here.
		if err := removeNetwork(ctx, e.cli, e.hostletProjectNetwork()); err != nil {
			errs = append(errs, err)
		}
		for _, ref := range []string{e.image, e.pause} {
			if ref == "" {
				continue
			}
			if err := removeImage(ctx, e.cli, ref); err != nil {
				errs = append(errs, err)
			}
		}
		if n, err := countContainers(ctx, e.cli, runLabel+"="+e.runID); err == nil && n > 0 {
			errs = append(errs, fmt.Errorf("%d containers of the run are left", n))
		}
		_ = e.cli.Close()
	}
	if e.git != nil {
		e.git.close()
	}
	if e.o.keep {
		logf("kept %s", e.dir)
	} else if e.dir != "" {
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		logf("cleaned up: no container, network, volume, image or temp dir of run %s is left", e.runID)
	}
	return errors.Join(errs...)
}

// timed starts the clock, runs op (may be nil) and, at the same time, wait;
// it returns the seconds from the start to the time wait reports.
func timed(ctx context.Context, op func(context.Context) error, wait func(context.Context) (time.Time, error)) (float64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t0 := time.Now()
	opErr := make(chan error, 1)
	if op == nil {
		opErr <- nil
	} else {
		go func() {
			err := op(ctx)
			if err != nil {
				cancel(err)
			}
			opErr <- err
		}()
	}
	done, werr := wait(ctx)
	if oerr := <-opErr; oerr != nil {
		return 0, oerr
	}
	if werr != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return 0, c
		}
		return 0, werr
	}
	return done.Sub(t0).Seconds(), nil
}

// block runs create, update and remove of n pods of shape for one variant.
func (e *env) block(ctx context.Context, b blockSpec, shape string, n, rep int) error {
	logf("%s, %s pods, N=%d, rep %d/%d", b, shape, n, rep+1, e.o.reps)
	switch b.variant {
	case vFloor, vFloorNet, vFloorLateRm:
		return e.floorBlock(ctx, b.variant, shape, n, b.workers, rep)
	case vWebhook, vPoll, vHostletCompose:
		return e.hostletBlock(ctx, b.variant, shape, n, rep)
	case vCompose:
		return e.composeBlock(ctx, n, rep)
	case vComposeUp:
		return e.composeUpBlock(ctx, n, rep)
	}
	return fmt.Errorf("unknown variant %s", b.variant)
}

func (e *env) record(variant, shape string, workers, n, rep int, step string, secs float64) {
	l, _ := loadAvg()
	name := blockSpec{variant, workers}.String()
	logf("  %-16s %-6s N=%-3d %-6s %7.2fs  (load %.2f)", name, shape, n, step, secs, l[0])
	e.res.Runs = append(e.res.Runs, runRecord{Variant: variant, Shape: shape, Parallelism: workers, N: n, Rep: rep + 1, Step: step, Seconds: secs, Load1: l[0]})
}

func (e *env) floorBlock(ctx context.Context, variant, shape string, n, workers, rep int) error {
	ports, err := freePorts(n * portsPerPod(shape))
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("%s-%s-%s-p%d-n%d-r%d", variant, e.runID, shape, workers, n, rep)
	api, closeAPI, err := e.floorEngine(fmt.Sprintf("%s-n%d-r%d", blockSpec{variant, workers}.short(), n, rep) + "-" + shape[:1])
	if err != nil {
		return err
	}
	defer closeAPI()
	f := newFloor(api, e.runID, e.image, e.pause, shape, e.o.grace, workers, ports, owner)
	f.lateRemove = variant == vFloorLateRm
	create, remove := func(ctx context.Context) error { return f.create(ctx, "v1") }, f.remove
	if variant == vFloorNet {
		f.network = "hbench-" + owner + "_default"
		create = func(ctx context.Context) error {
			if _, err := api.cli.NetworkCreate(ctx, f.network, network.CreateOptions{Driver: "bridge", Labels: f.labels()}); err != nil {
				return fmt.Errorf("create network %s: %w", f.network, err)
			}
			return f.create(ctx, "v1")
		}
		remove = func(ctx context.Context) error {
			if err := f.remove(ctx); err != nil {
				return err
			}
			return api.cli.NetworkRemove(ctx, f.network)
		}
		defer func() { _ = e.cli.NetworkRemove(context.Background(), f.network) }()
	}
	to := e.o.stepTimeout
	steps := []struct {
		name string
		op   func(context.Context) error
		wait func(context.Context) (time.Time, error)
	}{
		{stepCreate, create,
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v1", to) }},
		{stepUpdate, func(ctx context.Context) error { return f.update(ctx, "v2") },
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v2", to) }},
		{stepRemove, remove,
			func(ctx context.Context) (time.Time, error) {
				return waitNoContainers(ctx, e.cli, ownerLabel+"="+owner, to)
			}},
	}
	for _, s := range steps {
		started := time.Now()
		secs, err := timed(ctx, s.op, s.wait)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		e.record(variant, shape, workers, n, rep, s.name, secs)
		e.noteCalls(blockSpec{variant, workers}.String(), shape, n, rep, s.name, started, secs)
		if s.name == stepCreate {
			if err := e.checkShape(ctx, blockSpec{variant, workers}.String(), ownerLabel+"="+owner, shape, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// floorEngine is the engine a floor block calls: with -profile-calls
// through a timing proxy of its own (e.calls until close), as hostlet's
// blocks, so that the two sides' calls are timed alike; else e.cli.
func (e *env) floorEngine(block string) (dockerEngine, func(), error) {
	if !e.o.profileCalls {
		return dockerEngine{e.cli}, func() {}, nil
	}
	// Short: a Unix socket's path is at most 107 bytes, and e.dir is
	// the run's own.
	sock := filepath.Join(e.dir, "calls-"+block+".sock")
	proxy, err := startCountingProxy(sock, dockerSocket(e.cli.DaemonHost()))
	if err != nil {
		return dockerEngine{}, nil, err
	}
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithVersion(e.cli.ClientVersion()))
	if err != nil {
		proxy.close()
		return dockerEngine{}, nil, fmt.Errorf("docker client of the floor's proxy: %w", err)
	}
	e.calls = proxy
	return dockerEngine{cli}, func() { _ = cli.Close(); proxy.close(); e.calls = nil }, nil
}

// checkShape records, once per variant and shape (and at every failure),
// whether the containers of label right after a create step are n pods of
// shape as hostlet makes them.
func (e *env) checkShape(ctx context.Context, variant, label, shape string, n int) error {
	detail, ok, err := checkShape(ctx, e.cli, label, shape, e.pause, n)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s pods of %s are the shape's containers", shape, variant)
	for _, c := range e.res.Checks {
		if c.Name == name && (ok || !c.OK) {
			return nil
		}
	}
	if !ok {
		logf("  check failed: %s: %s", name, detail)
	}
	e.res.Checks = append(e.res.Checks, check{Name: name, OK: ok, Detail: detail})
	return nil
}

func (e *env) hostletBlock(ctx context.Context, variant, shape string, n, rep int) error {
	instance, cfg := e.blockConfig(variant, shape, n, rep)
	r := e.repos[variant]
	pprof := ""
	profiling := e.o.profile && variant == vWebhook && shape == e.o.shapes[0] && n == slices.Max(e.o.ns) && rep == 0
	if profiling {
		pp, err := freePorts(1)
		if err != nil {
			return err
		}
		pprof = fmt.Sprintf("127.0.0.1:%d", pp[0])
	}
	if e.o.profileCalls {
		sock := filepath.Join(e.dir, "calls-"+instance+".sock")
		proxy, err := startCountingProxy(sock, dockerSocket(e.cli.DaemonHost()))
		if err != nil {
			return err
		}
		e.calls, cfg.dockerHost = proxy, "unix://"+sock
		defer func() { proxy.close(); e.calls = nil }()
	}
	h, err := startHostlet(e.bin, e.dir, instance, cfg, e.token, pprof)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			h.stop(15 * time.Second)
		}
	}()
	head, err := r.head(ctx)
	if err != nil {
		return err
	}
	if err := h.waitRevision(ctx, head, time.Minute); err != nil {
		return err
	}
	ports, err := freePorts(n * portsPerPod(shape))
	if err != nil {
		return err
	}
	var profDone chan error
	if profiling {
		// A CPU profile over the whole block (create, update, remove).
		profDone = make(chan error, 1)
		secs := max(30, 4*n)
		go func() {
			profDone <- h.profile(ctx, "profile", secs, filepath.Join(e.dir, fmt.Sprintf("cpu-webhook-%s-n%d.pprof", shape, n)))
		}()
	}
	if err := e.hostletSteps(ctx, h, r, variant, shape, instance, ports, n, rep); err != nil {
		return err
	}
	if err := e.waitProjectNetworkGone(ctx, h, variant); err != nil {
		return err
	}
	if profiling {
		if err := h.profile(ctx, "heap", 0, filepath.Join(e.dir, fmt.Sprintf("heap-webhook-%s-n%d.pprof", shape, n))); err != nil {
			logf("heap profile: %v", err)
		}
		if err := <-profDone; err != nil {
			logf("cpu profile: %v", err)
		}
	}
	u, err := h.stopHostlet()
	stopped = true
	if err != nil {
		return fmt.Errorf("read hostlet usage: %w", err)
	}
	e.res.Processes = append(e.res.Processes, procRecord{Variant: variant, Shape: shape, N: n, Rep: rep + 1, usage: u})
	logf("  hostlet process: %.2f CPU-s, peak RSS %.1f MiB", u.CPUSeconds, mib(u.HWMBytes))
	return nil
}

// blockConfig is the instance and config of a hostlet block's hostlet:
// a 1 s git poll, or (webhook) 1 h and POST /sync after every push.
func (e *env) blockConfig(variant, shape string, n, rep int) (string, hostletConfig) {
	short := map[string]string{vWebhook: "wh", vPoll: "poll", vHostletCompose: "hc"}[variant]
	instance := fmt.Sprintf("%s-%s-%s-n%d-r%d", e.runID, short, shape, n, rep)
	cfg := hostletConfig{
		instance: instance, stateDir: filepath.Join(e.dir, "state", instance),
		gitURL: e.git.url(e.repos[variant].name), gitInterval: time.Second, syncInterval: 10 * time.Second,
		infraImage: e.pause, tokenFile: e.tokFile, concurrency: e.o.concurrency,
	}
	if variant == vWebhook || variant == vHostletCompose {
		cfg.gitInterval = time.Hour
	}
	return instance, cfg
}

// hostletSteps times a block's steps (create, update, remove) with hostlet
// h: each commits and pushes the step's files, then (webhook) asks h to
// sync, and waits for the pods to answer (or be gone). The created pods'
// containers are checked against the shape.
func (e *env) hostletSteps(ctx context.Context, h *hostlet, r *repo, variant, shape, instance string, ports []int, n, rep int) error {
	to := e.o.stepTimeout
	var op func(context.Context) error
	if variant == vWebhook || variant == vHostletCompose {
		op = h.syncNow
	}
	files := func(ports []int, value string) map[string]string {
		if variant == vHostletCompose {
			return hostletComposeFiles(e.runID, e.image, e.o.grace, ports, value)
		}
		return podFiles(e.runID, e.image, e.o.grace, shape, ports, value)
	}
	steps := []struct {
		name  string
		files map[string]string
		wait  func(context.Context) (time.Time, error)
	}{
		{stepCreate, files(ports, "v1"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v1", to) }},
		{stepUpdate, files(ports, "v2"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v2", to) }},
		{stepRemove, files(nil, ""),
			func(ctx context.Context) (time.Time, error) {
				return waitNoContainers(ctx, e.cli, "io.hostlet.instance="+instance, to)
			}},
	}
	// last is the step timed last: when it started and its seconds.
	var last struct {
		started time.Time
		secs    float64
	}
	for i, s := range steps {
		if i > 0 {
			e.noteCalls(variant, shape, n, rep, steps[i-1].name, last.started, last.secs)
		}
		if err := r.commit(ctx, fmt.Sprintf("%s %s N=%d", s.name, shape, n), s.files); err != nil {
			return err
		}
		if err := r.push(ctx); err != nil {
			return err
		}
		last.started = time.Now()
		secs, err := timed(ctx, op, s.wait)
		if err != nil {
			return fmt.Errorf("%s: %w; hostlet's log ends:\n%s", s.name, err, h.tail(20))
		}
		last.secs = secs
		e.record(variant, shape, 0, n, rep, s.name, secs)
		if s.name == stepCreate {
			if err := e.checkShape(ctx, variant, "io.hostlet.instance="+instance, shape, n); err != nil {
				return err
			}
		}
	}
	e.noteCalls(variant, shape, n, rep, steps[len(steps)-1].name, last.started, last.secs)
	return nil
}

// noteCalls records and prints the engine calls of the block's step
// (-profile-calls): those since the step before it ended, and where those
// begun during the step (started, secs long) fall in it.
func (e *env) noteCalls(variant, shape string, n, rep int, step string, started time.Time, secs float64) {
	if e.calls == nil {
		return
	}
	calls, spans := e.calls.takeTimes()
	tl := timeline(spans, started, secs)
	e.res.CallProfiles = append(e.res.CallProfiles, callProfile{Variant: variant, Shape: shape, N: n, Rep: rep + 1, Step: step, Calls: calls, Timeline: tl})
	logf("%s %s N=%d %s: engine calls (timed at the proxy)\n%s", variant, shape, n, step, callTable(calls))
	logf("  in the step's %.2f s: %d calls, the first at %.3f s, the first change (not a GET) at %.3f s, the last ended at %.3f s, at least one in flight for %.3f s",
		tl.Seconds, tl.Calls, tl.FirstCall, tl.FirstChange, tl.LastEnd, tl.Busy)
}

func (e *env) composeBlock(ctx context.Context, n, rep int) error {
	r := e.repos[vCompose]
	clone := filepath.Join(e.dir, "work", fmt.Sprintf("compose-clone-n%d-r%d", n, rep))
	if err := r.clone(ctx, e.git, clone); err != nil {
		return err
	}
	// The issue's loop, `while true; do git pull -q && docker-compose -p P
	// up -d --remove-orphans; sleep 1; done`, with a stop file in place
	// of `true`: the loop is stopped between two iterations, never while
	// docker-compose is in the middle of an API call (a client going away
	// mid-call can leave the engine with a stale network endpoint).
	stopFile := clone + ".stop"
	up := "docker-compose " + strings.Join(composeArgs(e.res.Machine.ComposeVersion, e.project, false), " ")
	if composeV2(e.res.Machine.ComposeVersion) {
		// Compose v2 refuses the remove step's file (no services).
		up = fmt.Sprintf("if grep -q '^services: {}$' docker-compose.yml; then docker-compose %s; else %s; fi",
			strings.Join(composeArgs(e.res.Machine.ComposeVersion, e.project, true), " "), up)
	}
	loop := fmt.Sprintf("while [ ! -e %q ]; do git pull -q && { %s; }; sleep 1; done", stopFile, up)
	p, err := startProc("compose-loop", clone, filepath.Join(e.dir, fmt.Sprintf("compose-n%d-r%d.log", n, rep)), e.gitEnv, "bash", "-c", loop)
	if err != nil {
		return err
	}
	defer func() {
		_ = os.WriteFile(stopFile, nil, 0o644)
		select {
		case <-p.done:
		case <-time.After(2 * time.Minute):
		}
		p.stop(15 * time.Second)
	}()
	// Let the loop run once before the first push.
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return err
	}
	ports, err := freePorts(n)
	if err != nil {
		return err
	}
	to := e.o.stepTimeout
	steps := []struct {
		name  string
		files map[string]string
		wait  func(context.Context) (time.Time, error)
	}{
		{stepCreate, composeFile(e.runID, e.image, e.o.grace, ports, "v1"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v1", to) }},
		{stepUpdate, composeFile(e.runID, e.image, e.o.grace, ports, "v2"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v2", to) }},
		{stepRemove, composeFile(e.runID, e.image, e.o.grace, nil, ""),
			func(ctx context.Context) (time.Time, error) {
				return waitNoContainers(ctx, e.cli, "com.docker.compose.project="+e.project, to)
			}},
	}
	for _, s := range steps {
		if err := r.commit(ctx, fmt.Sprintf("%s N=%d", s.name, n), s.files); err != nil {
			return err
		}
		if err := r.push(ctx); err != nil {
			return err
		}
		secs, err := timed(ctx, nil, s.wait)
		if err != nil {
			return fmt.Errorf("%s: %w; the loop's log ends:\n%s", s.name, err, p.tail(20))
		}
		e.record(vCompose, shapeSingle, 0, n, rep, s.name, secs)
	}
	return nil
}

// composeV2 reports whether version (`docker-compose version --short`)
// is Compose v2 (2.x, the Go one; Debian's docker-compose from Debian 13
// on), not Compose 1.29 (Debian 12's). Both name a project's network
// P_default and label its containers and networks
// com.docker.compose.project=P (the waits and the cleanup go by that
// label, never by container names: 1.29's P_svc_1, v2's P-svc-1).
func composeV2(version string) bool {
	return version != "" && !strings.HasPrefix(version, "1.")
}

// composeArgs are docker-compose's arguments for one step of project:
// `up -d --remove-orphans`; for a file without services (empty, the
// remove step) with Compose v2, which refuses such a file ("no service
// selected"), `down --remove-orphans`, which also removes the project's
// network (as hostlet does with the project, and floor-net).
func composeArgs(version, project string, empty bool) []string {
	if empty && composeV2(version) {
		return []string{"-p", project, "down", "--remove-orphans"}
	}
	return []string{"-p", project, "up", "-d", "--remove-orphans"}
}

// composeUpBlock times `docker-compose -p P up -d --remove-orphans` on the
// Compose file of each step (the same services hostlet-compose reads),
// from the call until the pods answer, or no container of P is left
// (with Compose v2 the remove step is `down`: composeArgs).
func (e *env) composeUpBlock(ctx context.Context, n, rep int) error {
	dir := filepath.Join(e.dir, "work", fmt.Sprintf("compose-up-n%d-r%d", n, rep))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	project := e.project + "-up"
	ports, err := freePorts(n)
	if err != nil {
		return err
	}
	to := e.o.stepTimeout
	// up writes the step's file (ports nil: no services) and runs
	// docker-compose on it.
	up := func(ports []int, value string) func(context.Context) error {
		files := composeFile(e.runID, e.image, e.o.grace, ports, value)
		return func(ctx context.Context) error {
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					return err
				}
			}
			args := composeArgs(e.res.Machine.ComposeVersion, project, len(ports) == 0)
			cmd := exec.CommandContext(ctx, "docker-compose", args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("docker-compose %s: %w\n%s", strings.Join(args[2:], " "), err, out)
			}
			return nil
		}
	}
	steps := []struct {
		name string
		op   func(context.Context) error
		wait func(context.Context) (time.Time, error)
	}{
		{stepCreate, up(ports, "v1"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v1", to) }},
		{stepUpdate, up(ports, "v2"),
			func(ctx context.Context) (time.Time, error) { return waitAnswer(ctx, ports, "v2", to) }},
		{stepRemove, up(nil, ""),
			func(ctx context.Context) (time.Time, error) {
				return waitNoContainers(ctx, e.cli, "com.docker.compose.project="+project, to)
			}},
	}
	defer func() {
		cmd := exec.Command("docker-compose", "-p", project, "down", "--remove-orphans")
		cmd.Dir = dir
		_ = cmd.Run()
	}()
	for _, s := range steps {
		secs, err := timed(ctx, s.op, s.wait)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		e.record(vComposeUp, shapeSingle, 0, n, rep, s.name, secs)
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// evictPageCache writes the file at path to disk and drops its pages from
// the page cache: the next reads come from disk, in the small folios of
// readahead, as after a reboot.
func evictPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("evict %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("evict %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evict %s: %w", path, err)
	}
	return nil
}

// copyFresh writes a new copy of the binary src to dst (replacing it). A
// file just written sits in the page cache in large folios, which the
// kernel maps in large pieces: the idle phase starts hostlet from a fresh
// copy, so its RSS is that of a freshly installed binary (the larger
// figure, docs/performance.md) whatever happened to the page cache during
// the timed steps.
func copyFresh(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
