package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type results struct {
	RunID    string    `json:"runId"`
	Date     string    `json:"date"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Commit   string    `json:"commit"`
	// Dirty says the working tree had uncommitted changes (they are part
	// of what was measured).
	Dirty   bool    `json:"dirty"`
	Command string  `json:"command"`
	Machine machine `json:"machine"`
	Config  struct {
		Ns       []int    `json:"n"`
		Reps     int      `json:"reps"`
		Variants []string `json:"variants"`
		// Shapes are the pod shapes run (none in files before shapes:
		// single pods only).
		Shapes []string `json:"shapes,omitempty"`
		// FloorParallelism are the pods at once the floor was measured
		// at (none in files before it: 4, the value of Concurrency).
		FloorParallelism []int `json:"floorParallelism,omitempty"`
		// Concurrency is hostlet's sync.concurrency.
		Concurrency int `json:"concurrency"`
		IdlePods    int `json:"idlePods,omitempty"`
		// EvictedBinary: the idle phase's hostlet started from a binary
		// read back from disk, not from one just written.
		EvictedBinary bool    `json:"evictedBinary,omitempty"`
		GraceSeconds  int     `json:"terminationGracePeriodSeconds"`
		IdleSeconds   float64 `json:"idleWindowSeconds"`
		CountSyncs    int     `json:"countSyncs"`
		Smoke         bool    `json:"smoke"`
	} `json:"config"`
	Load struct {
		Start        [3]float64 `json:"start"`
		End          [3]float64 `json:"end"`
		Quiet        *bool      `json:"quiet,omitempty"`
		QuietSamples []float64  `json:"quietSamples,omitempty"`
	} `json:"loadavg"`
	Runs      []runRecord   `json:"runs"`
	Processes []procRecord  `json:"hostletProcesses"`
	Summary   []summaryRow  `json:"summary"`
	Ratios    []ratioRow    `json:"ratios"`
	Hostlet   hostletTotals `json:"hostletWholeRun"`
	Idle      []idleRecord  `json:"idle"`
	APICalls  *apiCalls     `json:"apiCallsPerNoopSync,omitempty"`
	// CallProfiles are the Engine API calls of hostlet's and the floor's
	// blocks by step, timed at a proxy (-profile-calls).
	CallProfiles []callProfile  `json:"callProfiles,omitempty"`
	Checks       []check        `json:"checks"`
	Targets      []targetResult `json:"targets"`
	// Error is why the run stopped early (partial results only).
	Error string `json:"error,omitempty"`
}

type machine struct {
	CPUs           int    `json:"nproc"`
	CPUModel       string `json:"cpuModel"`
	MemTotalBytes  int64  `json:"memTotalBytes"`
	Kernel         string `json:"kernel"`
	DockerVersion  string `json:"dockerVersion"`
	DockerAPI      string `json:"dockerApiVersion"`
	CgroupVersion  string `json:"cgroupVersion"`
	StorageDriver  string `json:"storageDriver"`
	ComposeVersion string `json:"composeVersion"`
	GoVersion      string `json:"goVersion"`
}

type runRecord struct {
	Variant string  `json:"variant"`
	N       int     `json:"n"`
	Rep     int     `json:"rep"`
	Step    string  `json:"step"`
	Seconds float64 `json:"seconds"`
	// Load1 is the 1-minute load average when the step ended.
	Load1 float64 `json:"load1"`
	// Shape is the pod shape ("" in files before shapes: single).
	Shape string `json:"shape,omitempty"`
	// Parallelism is the floor's pods at once, min(-floor-par value, N)
	// (0 for the other variants, and in files before it: 4 workers).
	Parallelism int `json:"parallelism,omitempty"`
}

type procRecord struct {
	Variant string `json:"variant"`
	Shape   string `json:"shape,omitempty"`
	N       int    `json:"n"`
	Rep     int    `json:"rep"`
	usage
}

type summaryRow struct {
	Variant     string    `json:"variant"`
	Shape       string    `json:"shape,omitempty"`
	Parallelism int       `json:"parallelism,omitempty"`
	N           int       `json:"n"`
	Step        string    `json:"step"`
	Median      float64   `json:"median"`
	Min         float64   `json:"min"`
	Max         float64   `json:"max"`
	Samples     []float64 `json:"samples"`
}

// ratioRow holds median ÷ median per shape, step and N; 0 when a side is
// missing. The floor is the fastest one (smallest median) of the
// parallelisms measured, of the floor and of floor-late-rm.
type ratioRow struct {
	Shape            string  `json:"shape,omitempty"`
	N                int     `json:"n"`
	Step             string  `json:"step"`
	FloorSeconds     float64 `json:"fastestFloorSeconds,omitempty"`
	FloorParallelism int     `json:"fastestFloorParallelism,omitempty"`
	// FloorVariant is the variant of the fastest floor: vFloor, or
	// vFloorLateRm ("" in files before it: the floor).
	FloorVariant     string  `json:"fastestFloorVariant,omitempty"`
	WebhookOverFloor float64 `json:"hostletWebhookOverFloor"`
	PollOverFloor    float64 `json:"hostletPollOverFloor"`
	WebhookOverCompo float64 `json:"hostletWebhookOverCompose"`
	PollOverCompose  float64 `json:"hostletPollOverCompose"`
	// ComposeFileOverFloor and ComposeFileOverUp are hostlet reading the
	// services as one Compose file, ÷ the floor and ÷ docker-compose up -d
	// on that file.
	ComposeFileOverFloor float64 `json:"hostletComposeFileOverFloor,omitempty"`
	ComposeFileOverUp    float64 `json:"hostletComposeFileOverComposeUp,omitempty"`
	// NetFloorSeconds is the fastest floor that makes the project's
	// network too (vFloorNet), the fair floor of a Compose project;
	// ComposeFileOverNetFloor is hostlet reading the Compose file ÷ it.
	NetFloorSeconds         float64 `json:"fastestNetFloorSeconds,omitempty"`
	NetFloorParallelism     int     `json:"fastestNetFloorParallelism,omitempty"`
	ComposeFileOverNetFloor float64 `json:"hostletComposeFileOverNetFloor,omitempty"`
	// The Paired ratios are taken within each repetition (pairedRatio).
	PairedWebhookOverFloor      *pairedRatio `json:"pairedHostletWebhookOverFloor,omitempty"`
	PairedComposeFileOverUp     *pairedRatio `json:"pairedHostletComposeFileOverComposeUp,omitempty"`
	PairedComposeFileOverNative *pairedRatio `json:"pairedHostletComposeFileOverWebhook,omitempty"`
	// PairedSameWork is floor-late-rm ÷ the floor at the fastest floor's
	// pods at once, in the create and remove steps, where both make the
	// same calls: the run's own resolution.
	PairedSameWork *pairedRatio `json:"pairedSameWork,omitempty"`
}

type hostletTotals struct {
	// PeakRSSBytes is the largest VmHWM of any timed hostlet process.
	PeakRSSBytes int64 `json:"peakRssBytes"`
	// CPUSeconds sums utime+stime of every timed hostlet process (one
	// per variant, N and repetition, each living through its create,
	// update and remove).
	CPUSeconds float64          `json:"cpuSeconds"`
	Processes  int              `json:"processes"`
	ByVariant  map[string]usage `json:"byVariant"`
}

type idleRecord struct {
	Config              string  `json:"config"`
	Pods                int     `json:"pods"`
	WindowSeconds       float64 `json:"windowSeconds"`
	CPUSeconds          float64 `json:"cpuSeconds"`
	CPUSecondsPerMinute float64 `json:"cpuSecondsPerMinute"`
	RSSBytes            int64   `json:"rssBytes"`
	HWMBytes            int64   `json:"hwmBytes"`
	RSSAnonBytes        int64   `json:"rssAnonBytes"`
	RSSFileBytes        int64   `json:"rssFileBytes"`
	// TouchedBytes is how much of the resident memory the process
	// referenced during the window (its working set when idle).
	TouchedBytes int64 `json:"touchedBytes"`
	Syncs        int   `json:"syncs"`
}

type apiCalls struct {
	Pods          int            `json:"pods"`
	Syncs         int            `json:"syncs"`
	Calls         int            `json:"calls"`
	PerSync       float64        `json:"perSync"`
	WindowSeconds float64        `json:"windowSeconds"`
	ByEndpoint    map[string]int `json:"byEndpoint"`
	// StartupCalls are the calls from hostlet's start to its first
	// source delivery (ping, version, adoption inspects, events).
	StartupCalls map[string]int `json:"startupCalls"`
}

type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

type targetResult struct {
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
}

// callProfile is what one step of a hostlet or floor block asked of the
// engine: every call from the step's push (a floor's: its start) to the
// next step's, by method and path. Variant is a floor's block name
// ("floor×4").
type callProfile struct {
	Variant string `json:"variant"`
	Shape   string `json:"shape"`
	N       int    `json:"n"`
	// Rep counts from 1, as runRecord's (from 0 in files before
	// 2026-12-08's profile of the floor).
	Rep   int                  `json:"rep"`
	Step  string               `json:"step"`
	Calls map[string]callTimes `json:"calls"`
	// Timeline places the calls begun during the timed step in it.
	Timeline stepTimeline `json:"timeline"`
}

func newResults(o *options, runID string) *results {
	r := &results{RunID: runID, Date: time.Now().UTC().Format("2006-01-02")}
	r.Config.Ns = o.ns
	r.Config.Reps = o.reps
	r.Config.Variants = selected(o)
	r.Config.Shapes = o.shapes
	r.Config.FloorParallelism = o.floorPar
	r.Config.IdlePods = o.idlePods
	r.Config.EvictedBinary = o.evictBinary
	r.Config.Concurrency = o.concurrency
	r.Config.GraceSeconds = o.grace
	r.Config.IdleSeconds = o.idle.Seconds()
	r.Config.CountSyncs = o.countSyncs
	r.Config.Smoke = o.smoke
	r.Command = "go run ./bench " + strings.Join(os.Args[1:], " ")
	return r
}

func (e *env) machineInfo(ctx context.Context) error {
	m := &e.res.Machine
	m.CPUs = goruntime.NumCPU()
	m.GoVersion = goruntime.Version()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, l := range strings.Split(string(b), "\n") {
			if _, err := fmt.Sscanf(l, "MemTotal: %d kB", &kb); err == nil {
				m.MemTotalBytes = kb * 1024
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	v, err := e.cli.ServerVersion(ctx)
	if err != nil {
		return err
	}
	m.DockerVersion, m.DockerAPI = v.Version, v.APIVersion
	if info, err := e.cli.Info(ctx); err == nil {
		m.CgroupVersion, m.StorageDriver = info.CgroupVersion, info.Driver
	}
	if out, err := exec.CommandContext(ctx, "docker-compose", "version", "--short").Output(); err == nil {
		m.ComposeVersion = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		e.res.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		e.res.Dirty = len(bytes.TrimSpace(out)) > 0
	}
	return nil
}

// stats returns the median, min and max of xs.
func stats(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	med = s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return med, s[0], s[len(s)-1]
}

// key names the samples of one table cell.
type key struct {
	shape   string
	variant string
	par     int
	n       int
	step    string
}

// floorWorkers are the distinct pods at once the floor runs at for n pods:
// min(p, n) for each p of par, in order.
func floorWorkers(par []int, n int) []int {
	var out []int
	for _, p := range par {
		if w := min(p, n); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// normalize reads a results file of an earlier driver as this one writes
// it: no shapes means single pods, a floor without parallelism ran with
// Concurrency (4) workers, that is min(4, N) pods at once.
func (r *results) normalize() {
	workers := cmp.Or(r.Config.Concurrency, 4)
	if len(r.Config.Shapes) == 0 {
		r.Config.Shapes = []string{shapeSingle}
	}
	if len(r.Config.FloorParallelism) == 0 {
		r.Config.FloorParallelism = []int{workers}
	}
	for i := range r.Runs {
		rr := &r.Runs[i]
		rr.Shape = cmp.Or(rr.Shape, shapeSingle)
		if isFloor(rr.Variant) && rr.Parallelism == 0 {
			rr.Parallelism = min(workers, rr.N)
		}
	}
	for i := range r.Processes {
		r.Processes[i].Shape = cmp.Or(r.Processes[i].Shape, shapeSingle)
	}
}

func (r *results) summarize() {
	r.normalize()
	samples := map[key][]float64{}
	for _, rr := range r.Runs {
		k := key{rr.Shape, rr.Variant, rr.Parallelism, rr.N, rr.Step}
		samples[k] = append(samples[k], rr.Seconds)
	}
	med := map[key]float64{}
	r.Summary = nil
	for _, shape := range r.Config.Shapes {
		for _, n := range r.Config.Ns {
			for _, step := range allSteps {
				for _, v := range allVariants {
					pars := []int{0}
					if isFloor(v) {
						pars = floorWorkers(r.Config.FloorParallelism, n)
					}
					for _, p := range pars {
						k := key{shape, v, p, n, step}
						xs := samples[k]
						if len(xs) == 0 {
							continue
						}
						m, lo, hi := stats(xs)
						med[k] = m
						r.Summary = append(r.Summary, summaryRow{Variant: v, Shape: shape, Parallelism: p, N: n, Step: step, Median: m, Min: lo, Max: hi, Samples: xs})
					}
				}
			}
		}
	}
	r.ratios(med)
	r.Hostlet = hostletTotals{ByVariant: map[string]usage{}}
	for _, p := range r.Processes {
		r.Hostlet.Processes++
		r.Hostlet.CPUSeconds += p.CPUSeconds
		r.Hostlet.PeakRSSBytes = max(r.Hostlet.PeakRSSBytes, p.HWMBytes)
		u := r.Hostlet.ByVariant[p.Variant]
		u.CPUSeconds += p.CPUSeconds
		u.HWMBytes = max(u.HWMBytes, p.HWMBytes)
		u.RSSBytes = max(u.RSSBytes, p.RSSBytes)
		r.Hostlet.ByVariant[p.Variant] = u
	}
	r.targets()
}

// ratios computes the ratio rows from the medians med: per shape, N and
// step, the fastest floor (of the floor and floor-late-rm, at any
// parallelism) and the fastest floor-net, and each variant over them.
func (r *results) ratios(med map[key]float64) {
	ratio := func(a float64, b key) float64 {
		if a == 0 || med[b] == 0 {
			return 0
		}
		return a / med[b]
	}
	r.Ratios = nil
	byRep := samplesByRep(r.Runs)
	for _, shape := range r.Config.Shapes {
		for _, n := range r.Config.Ns {
			for _, step := range allSteps {
				row := ratioRow{Shape: shape, N: n, Step: step}
				for _, v := range []string{vFloor, vFloorLateRm} {
					for _, p := range floorWorkers(r.Config.FloorParallelism, n) {
						if m := med[key{shape, v, p, n, step}]; m > 0 && (row.FloorSeconds == 0 || m < row.FloorSeconds) {
							row.FloorSeconds, row.FloorParallelism, row.FloorVariant = m, p, v
						}
					}
				}
				wh, po := med[key{shape, vWebhook, 0, n, step}], med[key{shape, vPoll, 0, n, step}]
				fl := key{shape, row.FloorVariant, row.FloorParallelism, n, step}
				co := key{shape, vCompose, 0, n, step}
				row.WebhookOverFloor, row.PollOverFloor = ratio(wh, fl), ratio(po, fl)
				row.WebhookOverCompo, row.PollOverCompose = ratio(wh, co), ratio(po, co)
				hc := med[key{shape, vHostletCompose, 0, n, step}]
				row.ComposeFileOverFloor, row.ComposeFileOverUp = ratio(hc, fl), ratio(hc, key{shape, vComposeUp, 0, n, step})
				for _, p := range floorWorkers(r.Config.FloorParallelism, n) {
					if m := med[key{shape, vFloorNet, p, n, step}]; m > 0 && (row.NetFloorSeconds == 0 || m < row.NetFloorSeconds) {
						row.NetFloorSeconds, row.NetFloorParallelism = m, p
					}
				}
				row.ComposeFileOverNetFloor = ratio(hc, key{shape, vFloorNet, row.NetFloorParallelism, n, step})
				row.pairedRatios(byRep)
				r.Ratios = append(r.Ratios, row)
			}
		}
	}
}

// fastestFloor is the row's fastest floor as the tables show it: its
// median and its pods at once (×workers), "late rm" when it is
// floor-late-rm's; "–" when no floor ran.
func (rr ratioRow) fastestFloor() string {
	if rr.FloorSeconds == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f (%s)", rr.FloorSeconds, rr.floorOf())
}

// floorOf names the row's fastest floor: "×4", or "late rm ×4".
func (rr ratioRow) floorOf() string {
	if rr.FloorVariant == vFloorLateRm {
		return fmt.Sprintf("late rm ×%d", rr.FloorParallelism)
	}
	return fmt.Sprintf("×%d", rr.FloorParallelism)
}

// goalRatio is issue 13's goal: hostlet (webhook) ÷ the fastest floor at
// every N, shape and step.
const goalRatio = 1.05

// targets compares the figures with the issues' targets.
func (r *results) targets() {
	r.Targets = nil
	r.goalTargets()
	r.floorTargets()
	r.composeTargets()
	r.composeFileTargets()
	r.usageTargets()
}

// goalTargets: hostlet (webhook) within goalRatio of the fastest floor at
// every step, per shape and N.
func (r *results) goalTargets() {
	for _, shape := range r.Config.Shapes {
		for _, n := range r.Config.Ns {
			var wh, po []string
			met, seen := true, false
			for _, rr := range r.Ratios {
				if rr.Shape != shape || rr.N != n {
					continue
				}
				seen = seen || rr.WebhookOverFloor > 0
				met = met && rr.WebhookOverFloor > 0 && rr.WebhookOverFloor <= goalRatio
				v := rr.Step + " " + fmtRatio(rr.WebhookOverFloor)
				if rr.WebhookOverFloor > 0 {
					v += " (floor " + rr.floorOf() + ")"
				}
				wh = append(wh, v)
				po = append(po, fmtRatio(rr.PollOverFloor))
			}
			if !seen {
				continue
			}
			r.Targets = append(r.Targets, targetResult{
				Target: fmt.Sprintf("hostlet (webhook) ÷ fastest floor ≤ %.2f at every step, %s pods, N=%d", goalRatio, shape, n),
				Value:  fmt.Sprintf("%s (1 s poll: %s)", strings.Join(wh, ", "), strings.Join(po, ", ")),
				Met:    met,
			})
		}
	}
}

// floorTargets: hostlet (webhook) within 1.15 of the floor, single pods,
// N=10 and N=50 (every N of a run that has neither).
func (r *results) floorTargets() {
	ns := []int{}
	for _, n := range r.Config.Ns {
		if n == 10 || n == 50 {
			ns = append(ns, n)
		}
	}
	note := ""
	if len(ns) == 0 {
		ns, note = r.Config.Ns, " (targets are for N=10 and N=50; this run has neither)"
	}
	for _, rr := range r.Ratios {
		if rr.Shape != shapeSingle || !slices.Contains(ns, rr.N) || rr.WebhookOverFloor == 0 {
			continue
		}
		r.Targets = append(r.Targets, targetResult{
			Target: fmt.Sprintf("hostlet (webhook) ÷ floor ≤ 1.15, %s, N=%d%s", rr.Step, rr.N, note),
			Value:  fmt.Sprintf("%.2f (1 s poll: %.2f)", rr.WebhookOverFloor, rr.PollOverFloor),
			Met:    rr.WebhookOverFloor <= 1.15,
		})
	}
}

// composeFileTargets: hostlet reading the services as one Compose file
// at most as slow as docker-compose up -d on it, and within 1.15 of the
// floor, at N = 10 and 50 (issue 14).
func (r *results) composeFileTargets() {
	for _, rr := range r.Ratios {
		if rr.Shape != shapeSingle || (rr.N != 10 && rr.N != 50) || rr.ComposeFileOverFloor == 0 {
			continue
		}
		r.Targets = append(r.Targets,
			targetResult{
				Target: fmt.Sprintf("hostlet (Compose file) ÷ docker-compose up -d ≤ 1.0, %s, N=%d", rr.Step, rr.N),
				Value:  fmtRatio(rr.ComposeFileOverUp),
				Met:    rr.ComposeFileOverUp > 0 && rr.ComposeFileOverUp <= 1.0,
			},
			targetResult{
				Target: fmt.Sprintf("hostlet (Compose file) ÷ floor ≤ 1.15, %s, N=%d", rr.Step, rr.N),
				Value:  fmtRatio(rr.ComposeFileOverFloor),
				Met:    rr.ComposeFileOverFloor <= 1.15,
			})
		if rr.ComposeFileOverNetFloor > 0 {
			// The fair floor: the same containers on the project's
			// network, made and removed inside the steps as hostlet does.
			r.Targets = append(r.Targets, targetResult{
				Target: fmt.Sprintf("hostlet (Compose file) ÷ floor with the network ≤ 1.15, %s, N=%d", rr.Step, rr.N),
				Value:  fmtRatio(rr.ComposeFileOverNetFloor),
				Met:    rr.ComposeFileOverNetFloor <= 1.15,
			})
		}
	}
}

// composeTargets: hostlet faster than the compose loop, where it ran.
func (r *results) composeTargets() {
	for _, rr := range r.Ratios {
		if rr.PollOverCompose == 0 && rr.WebhookOverCompo == 0 {
			continue
		}
		r.Targets = append(r.Targets, targetResult{
			Target: fmt.Sprintf("hostlet faster than the compose loop, %s, N=%d (both timed from the push: hostlet 1 s poll)", rr.Step, rr.N),
			Value:  fmt.Sprintf("poll ÷ compose %.2f, webhook ÷ compose %.2f", rr.PollOverCompose, rr.WebhookOverCompo),
			Met:    rr.PollOverCompose > 0 && rr.PollOverCompose < 1,
		})
	}
}

// usageTargets: one Docker API call per no-op sync, and the idle CPU and
// RSS of the first idle measurement.
func (r *results) usageTargets() {
	if a := r.APICalls; a != nil {
		r.Targets = append(r.Targets, targetResult{
			Target: "exactly 1 Docker API call per no-op sync",
			Value:  fmt.Sprintf("%.2f (%d calls in %d syncs: %s)", a.PerSync, a.Calls, a.Syncs, formatCounts(a.ByEndpoint)),
			Met:    a.Syncs > 0 && a.Calls == a.Syncs,
		})
	}
	if len(r.Idle) > 0 {
		i := r.Idle[0]
		r.Targets = append(r.Targets,
			targetResult{
				Target: fmt.Sprintf("idle with %d pods ≤ 0.3 CPU-s per minute (%s)", i.Pods, i.Config),
				Value:  fmt.Sprintf("%.3f", i.CPUSecondsPerMinute),
				Met:    i.CPUSecondsPerMinute <= 0.3,
			},
			targetResult{
				Target: fmt.Sprintf("idle with %d pods RSS ≤ 30 MiB (%s)", i.Pods, i.Config),
				Value:  fmt.Sprintf("%.1f MiB (VmHWM %.1f MiB)", mib(i.RSSBytes), mib(i.HWMBytes)),
				Met:    i.RSSBytes <= 30<<20,
			})
	}
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

// failedChecks lists the correctness checks that failed (targets are
// reported, not enforced).
func (r *results) failedChecks() []string {
	var bad []string
	for _, c := range r.Checks {
		if !c.OK {
			bad = append(bad, c.Name+": "+c.Detail)
		}
	}
	return bad
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (r *results) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// shapeTitles introduce each shape's table.
var shapeTitles = map[string]string{
	shapeSingle: "Single pods (one container each; hostlet makes no infra container)",
	shapePair:   "Pair pods (two app containers and hostlet's infra container each: 3 containers per pod created and removed, 2 replaced on update)",
}

func workers(p int) string {
	if p == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", p)
}

// markdown renders the figures as the tables of docs/performance.md.
func (r *results) markdown() string {
	var b strings.Builder
	pars := r.Config.FloorParallelism
	b.WriteString(r.Machine.engineNote())
	if c := r.Config.Concurrency; c != 0 && c != 4 {
		fmt.Fprintf(&b, "hostlet's sync.concurrency: %d (not the default 4).\n\n", c)
	}
	lateRm := ""
	if slices.Contains(r.Config.Variants, vFloorLateRm) {
		lateRm = " and of floor-late-rm (\"late rm\": the old containers removed after the new ones started)"
	}
	fmt.Fprintf(&b, "Seconds, median (min–max) of %d repetition(s). The floor is measured at %s pods at once; the ratios are to the fastest of them in the row (×workers)%s; more workers than pods run as one per pod (\"as\").\n\n",
		r.Config.Reps, joinInts(pars), lateRm)
	cells := r.cells()
	for _, shape := range r.Config.Shapes {
		r.writeShape(&b, shape, cells)
	}
	r.writeComposeFile(&b, cells)
	r.writePaired(&b)
	r.writeUsage(&b)
	r.writeChecks(&b)
	fmt.Fprintf(&b, "Load average at start %.2f %.2f %.2f, at end %.2f %.2f %.2f", r.Load.Start[0], r.Load.Start[1], r.Load.Start[2], r.Load.End[0], r.Load.End[1], r.Load.End[2])
	if r.Load.Quiet != nil && !*r.Load.Quiet {
		b.WriteString(" (the machine never got quiet: measured anyway)")
	}
	b.WriteString(".\n")
	return b.String()
}

// engineNote is the line naming the engine and the Compose the figures
// are of ("" when neither is known).
func (m machine) engineNote() string {
	var parts []string
	if m.DockerVersion != "" {
		parts = append(parts, fmt.Sprintf("Docker %s (API %s", m.DockerVersion, m.DockerAPI))
		if m.StorageDriver != "" {
			parts[0] += ", " + m.StorageDriver
		}
		parts[0] += ")"
	}
	if m.ComposeVersion != "" {
		parts = append(parts, "docker-compose "+m.ComposeVersion)
	}
	if len(parts) == 0 {
		return ""
	}
	return "Engine: " + strings.Join(parts, "; ") + ".\n\n"
}

// summaryCells are the summary rows by shape, variant, parallelism, N and
// step.
type summaryCells map[key]summaryRow

func (r *results) cells() summaryCells {
	cell := summaryCells{}
	for _, s := range r.Summary {
		cell[key{s.Shape, s.Variant, s.Parallelism, s.N, s.Step}] = s
	}
	return cell
}

// format is a cell's median (and its range, over more than one sample),
// or "–" when it was not measured.
func (c summaryCells) format(k key) string {
	s, ok := c[k]
	if !ok {
		return "–"
	}
	if len(s.Samples) == 1 {
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// writeShape writes the table of one shape: a row per N and step, the
// floor at each parallelism, hostlet's variants and their ratios (the
// compose columns only when the compose loop ran for it).
func (r *results) writeShape(b *strings.Builder, shape string, cells summaryCells) {
	pars := r.Config.FloorParallelism
	compose, lateRm := false, false
	for _, s := range r.Summary {
		compose = compose || (s.Shape == shape && s.Variant == vCompose)
		lateRm = lateRm || (s.Shape == shape && s.Variant == vFloorLateRm)
	}
	floors := []string{vFloor}
	if lateRm {
		floors = append(floors, vFloorLateRm)
	}
	fmt.Fprintf(b, "%s:\n\n| N | step |", cmp.Or(shapeTitles[shape], shape))
	for _, v := range floors {
		what := "API"
		if v == vFloorLateRm {
			what = "API, late rm"
		}
		for _, p := range pars {
			fmt.Fprintf(b, " floor (%s, %s) |", what, workers(p))
		}
	}
	b.WriteString(" fastest floor | hostlet, webhook | hostlet, 1 s poll |")
	if compose {
		b.WriteString(" compose loop |")
	}
	b.WriteString(" webhook ÷ floor | poll ÷ floor |")
	if compose {
		b.WriteString(" webhook ÷ compose | poll ÷ compose |")
	}
	cols := 7 + len(floors)*len(pars)
	if compose {
		cols += 3
	}
	b.WriteString("\n|---:|---|" + strings.Repeat("---:|", cols-2) + "\n")
	for _, rr := range r.Ratios {
		if rr.Shape != shape {
			continue
		}
		fmt.Fprintf(b, "| %d | %s |", rr.N, rr.Step)
		for _, v := range floors {
			writeFloorCells(b, pars, shape, v, rr, cells)
		}
		fmt.Fprintf(b, " %s | %s | %s |", rr.fastestFloor(), cells.format(key{shape, vWebhook, 0, rr.N, rr.Step}), cells.format(key{shape, vPoll, 0, rr.N, rr.Step}))
		if compose {
			fmt.Fprintf(b, " %s |", cells.format(key{shape, vCompose, 0, rr.N, rr.Step}))
		}
		fmt.Fprintf(b, " %s | %s |", fmtRatio(rr.WebhookOverFloor), fmtRatio(rr.PollOverFloor))
		if compose {
			fmt.Fprintf(b, " %s | %s |", fmtRatio(rr.WebhookOverCompo), fmtRatio(rr.PollOverCompose))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeComposeFile writes the table of the Compose-file variants, where
// they ran: hostlet reading the single pods as one Compose file beside
// docker-compose up -d on that file.
func (r *results) writeComposeFile(b *strings.Builder, cells summaryCells) {
	ran := false
	for _, s := range r.Summary {
		ran = ran || s.Variant == vHostletCompose || s.Variant == vComposeUp
	}
	if !ran {
		return
	}
	b.WriteString("The same single pods as one Compose file (services with image, environment, ports, labels, restart, stop_grace_period)")
	up := "docker-compose up -d"
	if v := r.Machine.ComposeVersion; v != "" {
		fmt.Fprintf(b, "; docker-compose %s", v)
		up = "docker-compose " + v + " up -d"
		if composeV2(v) {
			b.WriteString(" (Compose v2 refuses a file without services: its remove step is `down --remove-orphans`, which removes the project's network too)")
		}
	}
	b.WriteString(":\n\n")
	fmt.Fprintf(b, "| N | step | fastest floor | fastest floor with the network | hostlet, Compose file (webhook) | %s | Compose file ÷ floor | ÷ floor with the network | Compose file ÷ up -d |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n", up)
	for _, rr := range r.Ratios {
		if rr.Shape != shapeSingle {
			continue
		}
		fastestNet := "–"
		if rr.NetFloorSeconds > 0 {
			fastestNet = fmt.Sprintf("%.2f (×%d)", rr.NetFloorSeconds, rr.NetFloorParallelism)
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", rr.N, rr.Step, rr.fastestFloor(), fastestNet,
			cells.format(key{shapeSingle, vHostletCompose, 0, rr.N, rr.Step}), cells.format(key{shapeSingle, vComposeUp, 0, rr.N, rr.Step}),
			fmtRatio(rr.ComposeFileOverFloor), fmtRatio(rr.ComposeFileOverNetFloor), fmtRatio(rr.ComposeFileOverUp))
	}
	b.WriteString("\n")
}

// writeFloorCells writes a row's floor variant at each parallelism: a
// parallelism that runs as an earlier one (more workers than pods) is
// "as" that one.
func writeFloorCells(b *strings.Builder, pars []int, shape, variant string, rr ratioRow, cells summaryCells) {
	for ci, p := range pars {
		w, as := min(p, rr.N), 0
		for _, q := range pars[:ci] {
			if min(q, rr.N) == w {
				as = q
				break
			}
		}
		if as > 0 {
			fmt.Fprintf(b, " as %d |", as)
		} else {
			fmt.Fprintf(b, " %s |", cells.format(key{shape, variant, w, rr.N, rr.Step}))
		}
	}
}

// writeUsage writes the load during the timed steps, hostlet's own CPU
// and memory, the idle table and the API calls per no-op sync.
func (r *results) writeUsage(b *strings.Builder) {
	var loads []float64
	for _, rr := range r.Runs {
		loads = append(loads, rr.Load1)
	}
	if len(loads) > 0 {
		med, lo, hi := stats(loads)
		fmt.Fprintf(b, "1-minute load average at the end of the timed steps: median %.2f, min %.2f, max %.2f (2 CPUs).\n", med, lo, hi)
	}
	b.WriteString("\n")
	if r.Hostlet.Processes > 0 {
		fmt.Fprintf(b, "hostlet over the timed blocks (%d processes, one per variant, shape, N and repetition): peak RSS (VmHWM) %.1f MiB, %.2f CPU-seconds in all",
			r.Hostlet.Processes, mib(r.Hostlet.PeakRSSBytes), r.Hostlet.CPUSeconds)
		for _, v := range slices.Sorted(maps.Keys(r.Hostlet.ByVariant)) {
			u := r.Hostlet.ByVariant[v]
			fmt.Fprintf(b, "; %s %.2f CPU-s, peak %.1f MiB", v, u.CPUSeconds, mib(u.HWMBytes))
		}
		b.WriteString(".\n\n")
	}
	if len(r.Idle) > 0 {
		b.WriteString("| idle, pods running | window | CPU-s per minute | RSS (anon + file) | touched in the window | VmHWM | syncs |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, i := range r.Idle {
			fmt.Fprintf(b, "| %d pods, %s | %.0f s | %.3f | %.1f MiB (%.1f + %.1f) | %.1f MiB | %.1f MiB | %d |\n", i.Pods, i.Config, i.WindowSeconds, i.CPUSecondsPerMinute,
				mib(i.RSSBytes), mib(i.RSSAnonBytes), mib(i.RSSFileBytes), mib(i.TouchedBytes), mib(i.HWMBytes), i.Syncs)
		}
		b.WriteString("\n")
	}
	if a := r.APICalls; a != nil {
		fmt.Fprintf(b, "Docker API calls per no-op sync (%d pods, sync.interval 1s, %d syncs in %.0f s through the counting proxy): **%.2f** — %s. At start-up (before the window): %s.\n\n",
			a.Pods, a.Syncs, a.WindowSeconds, a.PerSync, formatCounts(a.ByEndpoint), formatCounts(a.StartupCalls))
	}
}

// writeChecks writes the checks and the targets, each with whether it
// was met.
func (r *results) writeChecks(b *strings.Builder) {
	if len(r.Checks) > 0 {
		for _, c := range r.Checks {
			mark := "ok"
			if !c.OK {
				mark = "FAILED"
			}
			fmt.Fprintf(b, "- check %s: %s (%s)\n", c.Name, mark, c.Detail)
		}
		b.WriteString("\n")
	}
	if len(r.Targets) > 0 {
		b.WriteString("| target | value | met |\n|---|---|---|\n")
		for _, t := range r.Targets {
			met := "yes"
			if !t.Met {
				met = "**no**"
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", t.Target, t.Value, met)
		}
		b.WriteString("\n")
	}
}

func joinInts(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, strconv.Itoa(x))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// renderFile reads a results file (of this driver or an earlier one) and
// renders its tables.
func renderFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	r.summarize()
	return r.markdown(), nil
}
