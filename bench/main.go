// Command bench runs hostlet side by side with the Docker floor (the same
// containers created straight through the Engine API with as many workers
// as hostlet's default sync.concurrency) and with a compose-on-cron loop
// (`git pull && docker-compose up -d --remove-orphans` every second), for
// N single-container pods of the demo image, and measures create, update
// and remove times, hostlet's memory and CPU, its idle cost with the pods
// running and the Docker API calls of a no-op sync.
//
// Usage:
//
//	go run ./bench [-n 1,10,50] [-reps 3] [-out bench/results/DATE.json] [-smoke]
//
// `make bench` runs the full scenario, `make bench-smoke` a quick one (N=2,
// one repetition, short idle windows) that CI can afford. Everything the
// driver creates (containers, networks, volumes, the demo image, temporary
// folders, processes) carries this run's ID and is removed at the end, on
// error and on Ctrl-C. `go run ./bench -cleanup` removes what a killed run
// (SIGKILL) left behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
}

// Variant names.
const (
	vFloor   = "floor"
	vWebhook = "hostlet-webhook"
	vPoll    = "hostlet-poll"
	vCompose = "compose"
)

var allVariants = []string{vFloor, vWebhook, vPoll, vCompose}

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
		ns       = fs.String("n", "1,10,50", "comma-separated pod counts")
		variants = fs.String("variants", strings.Join(allVariants, ","), "variants to run")
		o        options
	)
	fs.IntVar(&o.reps, "reps", 3, "repetitions per pod count")
	fs.StringVar(&o.out, "out", "", "JSON results file (default bench/results/<date>.json, -2, -3... if taken; none with -smoke)")
	fs.BoolVar(&o.smoke, "smoke", false, "quick run for CI: N=2, one repetition, short idle and count windows, no quiet wait")
	fs.StringVar(&o.hostletBin, "hostlet", "", "hostlet binary to run (default: build ./cmd/hostlet with CGO_ENABLED=0 into the run's temp dir)")
	fs.IntVar(&o.grace, "grace", 10, "terminationGracePeriodSeconds of the pods = the floor's stop timeout = compose stop_grace_period")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle measurement window")
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "wait after the pods answer before the idle window")
	fs.IntVar(&o.countSyncs, "count-syncs", 10, "no-op syncs in the API-call counting window")
	fs.DurationVar(&o.stepTimeout, "step-timeout", 10*time.Minute, "limit of one timed step")
	fs.BoolVar(&o.waitQuiet, "wait-quiet", true, "wait until the machine is quiet before measuring (off with -smoke)")
	fs.Float64Var(&o.quietLoad, "quiet-load", 0.7, "1-minute load average below which the machine counts as quiet")
	fs.DurationVar(&o.quietFor, "quiet-for", 2*time.Minute, "how long the load must stay below -quiet-load")
	fs.DurationVar(&o.quietMax, "quiet-max", 60*time.Minute, "give up waiting for quiet after this long (and run anyway)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (logs, repos) after the run")
	fs.BoolVar(&o.cleanup, "cleanup", false, "only remove what earlier (killed) bench runs left on the engine, then exit")
	fs.BoolVar(&o.profile, "profile", false, "with a binary built with the pprof tag (make build TAGS=grpcnotrace,nethttpomithttp2,pprof): save CPU and heap profiles of the N=max webhook block and the idle window into the temp dir")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.smoke {
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
	} else if o.out == "" {
		o.out = defaultOut("bench/results", time.Now().UTC())
	}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 500 {
			return nil, fmt.Errorf("-n: %q is not a pod count in 1..500", s)
		}
		o.ns = append(o.ns, n)
	}
	if o.reps < 1 {
		return nil, errors.New("-reps must be at least 1")
	}
	if o.grace < 1 {
		return nil, errors.New("-grace must be at least 1")
	}
	o.variants = map[string]bool{}
	for _, v := range strings.Split(*variants, ",") {
		v = strings.TrimSpace(v)
		ok := false
		for _, a := range allVariants {
			ok = ok || a == v
		}
		if !ok {
			return nil, fmt.Errorf("-variants: unknown variant %q (known: %s)", v, strings.Join(allVariants, ", "))
		}
		o.variants[v] = true
	}
	return &o, nil
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
