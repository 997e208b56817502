// Command bench runs hostlet side by side with the Docker floor (the same
// containers created straight through the Engine API) and with a
// compose-on-cron loop (`git pull && docker-compose up -d --remove-orphans`
// every second), for N pods of the demo image, and measures create, update
// and remove times, hostlet's memory and CPU, its idle cost with the pods
// running and the Docker API calls of a no-op sync.
//
// Usage:
//
//	go run ./bench [-n 1,10,50,200] [-shapes single,pair] [-floor-par 1,4,8]
//	               [-reps 3] [-out bench/results/DATE.json] [-smoke]
//	go run ./bench -render bench/results/DATE.json
//	go run ./bench -cleanup
//
// Pod shapes (-shapes). "single": one app container per pod, publishing
// its own port; hostlet makes no infra container for it. "pair": two app
// containers per pod ("app" on 8080, "side" on 8081, each published on a
// host port of its own), so hostlet makes three containers per pod, as for
// every pod of more than one container (sync/spec.go): an infra container
// from the pause image (entrypoint `/hostlet pause`, every port of the pod
// published, restart always, 2 s stop timeout), created and started first,
// then the two app containers, in manifest order, each joining the infra
// container's network namespace (NetworkMode container:<infra ID>). An
// update (new env value) replaces the two app containers and keeps the
// infra container (its hash holds only ports and labels); a remove takes
// down the app containers, then the infra container. The pause image is
// the one internal/agent/pause.go builds from the hostlet binary (same
// file, same entrypoint), loaded under a tag of the run's own and given to
// every hostlet of the run as docker.infraImage. The floor makes exactly
// these containers (image, entrypoint, env, ports, network mode, restart
// policy, stop timeout; only the names and bookkeeping labels differ) with
// the same calls in the same order within a pod: create and start the
// infra, then create and start each app container; on update stop and
// remove each app container, then create and start each; on remove stop
// and remove each app container, then the infra. The compose loop runs the
// single shape only: the pair scenario is against the floor. The variant
// floor-late-rm updates as hostlet's late removal does: in each pod it
// stops each old app container, then creates and starts each new one
// (the names carry the value, so both exist at once); once every pod's
// new ones are started it removes the old ones (the infra container
// stays). Its create and remove steps are the floor's.
//
// The floor's parallelism (-floor-par). hostlet works on at most
// sync.concurrency = 4 pods at once; the floor is not held to that: it is
// measured at 1, 4 and 8 pods at once (each worker takes one pod at a time
// and makes its containers in order), and each ratio is to the fastest of
// them for that shape, N and step (and of floor-late-rm's, when it ran),
// so it is a ratio to what the engine can do on this machine, not to one
// arbitrary setting. Every repetition runs the floor at every
// parallelism, each as a block of its own in the order (blockOrder) of the
// repetition, rather than calibrating once and then
// timing one parallelism: which one is fastest differs by step and N and
// is decided by noise when two are close, and a calibration that picks
// the wrong one makes the floor slower than the limit and flatters
// hostlet. Taking the smallest of three medians can only err the other
// way (a floor faster than its typical run), against hostlet. A
// parallelism above N runs the same as N pods at once, so it is run once
// per distinct min(p, N) (N = 1: one floor block; N = 2: 1 and 2).
//
// `make bench` runs the full scenario (N = 1, 10, 50, 200, both shapes,
// three repetitions, on a quiet machine; about 7 hours on 2 vCPUs, the
// floor at 1 and 8 pods at once besides 4 about a third of it), `make
// bench-smoke` a quick one (N = 2, both shapes, one repetition, short
// idle windows) that CI can afford. The idle phase and the API-call count
// use -idle-pods single pods (50; N with -smoke). Everything the driver
// creates (containers, networks, volumes, the demo and pause images,
// temporary folders, processes) carries this run's ID and is removed at
// the end, on error and on Ctrl-C. `go run ./bench -cleanup` removes what
// a killed run (SIGKILL) left behind. `-render FILE` prints the tables of
// a results file (earlier files included: a run without shapes or floor
// parallelism is single pods against a floor of 4 workers).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the driver's flags.
type options struct {
	ns          []int
	reps        int
	out         string
	smoke       bool
	hostletBin  string
	variants    map[string]bool
	grace       int
	idle        time.Duration
	settle      time.Duration
	countSyncs  int
	stepTimeout time.Duration
	waitQuiet   bool
	quietLoad   float64
	quietFor    time.Duration
	quietMax    time.Duration
	keep        bool
	cleanup     bool
	profile     bool
	shapes      []string
	floorPar    []int
	idlePods    int
	render      string
	// concurrency is hostlet's sync.concurrency in the timed blocks.
	concurrency int
	// profileCalls times hostlet's Engine API calls at a proxy.
	profileCalls bool
	// evictBinary starts the idle phase's hostlet from a copy of its
	// binary whose page cache was dropped, as after a reboot.
	evictBinary bool
}

// Variant names.
const (
	vFloor   = "floor"
	vWebhook = "hostlet-webhook"
	vPoll    = "hostlet-poll"
	vCompose = "compose"
	// vHostletCompose is hostlet (webhook) reading the same services as
	// one Compose file; vComposeUp is `docker-compose up -d` run on that
	// file at each step (timed from the call).
	vHostletCompose = "hostlet-compose"
	vComposeUp      = "compose-up"
	// vFloorNet is the floor with the network a Compose project has: a
	// bridge made before the containers (inside the create step), each
	// container on it with its name as alias, removed after them (inside
	// the remove step). Single pods only.
	vFloorNet = "floor-net"
	// vFloorLateRm is the floor with an update that removes the old app
	// containers after starting the new ones (per pod: stop the old,
	// create and start the new; then, once every pod's are started,
	// remove the old: floor.update), as hostlet's late removal does; its
	// create and remove steps are the floor's. Both shapes. The ratios
	// are to the fastest of it and the floor.
	vFloorLateRm = "floor-late-rm"
)

var allVariants = []string{vFloor, vWebhook, vPoll, vCompose, vHostletCompose, vComposeUp, vFloorNet, vFloorLateRm}

// isFloor reports whether variant v is a floor (run at each parallelism).
func isFloor(v string) bool { return v == vFloor || v == vFloorNet || v == vFloorLateRm }

// variantsHelp is -variants' usage.
const variantsHelp = "variants to run: floor (the containers straight through the Engine API), " +
	"floor-late-rm (the floor, an update removing the old containers after starting the new ones), " +
	"hostlet-webhook, hostlet-poll, compose (the compose-on-cron loop), hostlet-compose (hostlet reading one Compose file), " +
	"compose-up (docker-compose up -d on it), floor-net (the floor on the Compose project's network); " +
	"ratios are to the fastest of floor and floor-late-rm"

// Step names.
const (
	stepCreate = "create"
	stepUpdate = "update"
	stepRemove = "remove"
)

var allSteps = []string{stepCreate, stepUpdate, stepRemove}

func main() {
	os.Exit(mainExit())
}

func mainExit() int {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.render != "" {
		md, err := renderFile(o.render)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Print(md)
		return 0
	}
	if o.cleanup {
		if err := cleanupAll(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "bench: cleanup:", err)
			return 1
		}
		return 0
	}
	if err := run(ctx, o); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "bench: interrupted; cleaned up")
			return 130
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		ns       = fs.String("n", "1,10,50,200", "comma-separated pod counts")
		variants = fs.String("variants", strings.Join(allVariants, ","), variantsHelp)
		shapes   = fs.String("shapes", strings.Join(allShapes, ","), "pod shapes: single (one container), pair (two app containers and hostlet's infra container)")
		floorPar = fs.String("floor-par", "1,4,8", "pods at once of the floor: each is measured, ratios are to the fastest")
		o        options
	)
	fs.IntVar(&o.reps, "reps", 3, "repetitions per pod count")
	fs.StringVar(&o.out, "out", "", "JSON results file (default bench/results/<date>.json, -2, -3... if taken; none with -smoke)")
	fs.BoolVar(&o.smoke, "smoke", false, "quick run for CI: N=2, one repetition, short idle and count windows, no quiet wait")
	fs.StringVar(&o.hostletBin, "hostlet", "", "hostlet binary to run (default: build ./cmd/hostlet with CGO_ENABLED=0 into the run's temp dir)")
	fs.IntVar(&o.concurrency, "concurrency", 4, "hostlet's sync.concurrency (pods applied at once) in the timed blocks")
	fs.IntVar(&o.grace, "grace", 10, "terminationGracePeriodSeconds of the pods = the floor's stop timeout = compose stop_grace_period")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle measurement window")
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "wait after the pods answer before the idle window")
	fs.IntVar(&o.countSyncs, "count-syncs", 10, "no-op syncs in the API-call counting window")
	fs.DurationVar(&o.stepTimeout, "step-timeout", 20*time.Minute, "limit of one timed step")
	fs.IntVar(&o.idlePods, "idle-pods", 50, "single pods running in the idle phase and the API-call count (default with -smoke: the largest -n)")
	fs.StringVar(&o.render, "render", "", "only print the tables of this results file, then exit")
	fs.BoolVar(&o.waitQuiet, "wait-quiet", true, "wait until the machine is quiet before measuring (off with -smoke)")
	fs.Float64Var(&o.quietLoad, "quiet-load", 0.7, "1-minute load average below which the machine counts as quiet")
	fs.DurationVar(&o.quietFor, "quiet-for", 2*time.Minute, "how long the load must stay below -quiet-load")
	fs.DurationVar(&o.quietMax, "quiet-max", 60*time.Minute, "give up waiting for quiet after this long (and run anyway)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (logs, repos) after the run")
	fs.BoolVar(&o.cleanup, "cleanup", false, "only remove what earlier (killed) bench runs left on the engine, then exit")
	fs.BoolVar(&o.evictBinary, "evict-binary", false, "start the idle phase's hostlet from a copy of its binary whose page cache was dropped (read back from disk on use, as after a reboot), not from one just written (held in large folios that are mapped whole: the larger RSS)")
	fs.BoolVar(&o.profileCalls, "profile-calls", false, "run hostlet's and the floor's blocks behind a proxy that times every Engine API call, and print and record each step's calls (the proxy adds a hop: such a run's timed figures are not comparable with a run without it)")
	fs.BoolVar(&o.profile, "profile", false, "with a binary built with the pprof tag (make build TAGS=grpcnotrace,nethttpomithttp2,pprof): save CPU and heap profiles of the N=max webhook block and the idle window into the temp dir")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.smoke {
		smokeDefaults(&o, set, ns)
	} else if o.out == "" && o.render == "" {
		o.out = defaultOut("bench/results", time.Now().UTC())
	}
	if err := o.parseLists(set, *ns, *floorPar, *shapes, *variants); err != nil {
		return nil, err
	}
	return &o, nil
}

// smokeDefaults are -smoke's defaults of the flags not given (set): N=2,
// one repetition, short idle and count windows, no quiet wait.
func smokeDefaults(o *options, set map[string]bool, ns *string) {
	if !set["n"] {
		*ns = "2"
	}
	if !set["reps"] {
		o.reps = 1
	}
	if !set["idle"] {
		o.idle = 5 * time.Second
	}
	if !set["settle"] {
		o.settle = 2 * time.Second
	}
	if !set["count-syncs"] {
		o.countSyncs = 3
	}
	if !set["wait-quiet"] {
		o.waitQuiet = false
	}
}

// parseLists parses the list flags (-n, -floor-par, -shapes, -variants)
// and checks the numbers.
func (o *options) parseLists(set map[string]bool, ns, floorPar, shapes, variants string) error {
	var err error
	if o.ns, err = intList("-n", ns, 500); err != nil {
		return err
	}
	if o.floorPar, err = intList("-floor-par", floorPar, 64); err != nil {
		return err
	}
	slices.Sort(o.floorPar)
	o.floorPar = slices.Compact(o.floorPar)
	if o.smoke && !set["idle-pods"] {
		o.idlePods = slices.Max(o.ns)
	}
	if o.idlePods < 1 || o.idlePods > 500 {
		return errors.New("-idle-pods must be in 1..500")
	}
	for _, sh := range strings.Split(shapes, ",") {
		sh = strings.TrimSpace(sh)
		if !slices.Contains(allShapes, sh) {
			return fmt.Errorf("-shapes: unknown shape %q (known: %s)", sh, strings.Join(allShapes, ", "))
		}
		if !slices.Contains(o.shapes, sh) {
			o.shapes = append(o.shapes, sh)
		}
	}
	if o.reps < 1 {
		return errors.New("-reps must be at least 1")
	}
	if o.grace < 1 {
		return errors.New("-grace must be at least 1")
	}
	o.variants = map[string]bool{}
	for _, v := range strings.Split(variants, ",") {
		v = strings.TrimSpace(v)
		ok := false
		for _, a := range allVariants {
			ok = ok || a == v
		}
		if !ok {
			return fmt.Errorf("-variants: unknown variant %q (known: %s)", v, strings.Join(allVariants, ", "))
		}
		o.variants[v] = true
	}
	return nil
}

// intList parses a comma-separated list of integers in 1..most.
func intList(flagName, list string, most int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%s: %q is not a number in 1..%d", flagName, s, most)
		}
		out = append(out, n)
	}
	return out, nil
}

// defaultOut is dir/<date>.json, or <date>-2.json, -3, ... when an
// earlier run of the day wrote that one: a run never overwrites another.
func defaultOut(dir string, now time.Time) string {
	base := filepath.Join(dir, now.Format("2006-01-02"))
	out := base + ".json"
	for i := 2; ; i++ {
		if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = fmt.Sprintf("%s-%d.json", base, i)
	}
}

// logf prints a progress line with the time since start.
var started = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}
