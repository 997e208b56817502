package main

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

func TestStats(t *testing.T) {
	for _, tc := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
		{nil, 0, 0, 0},
	} {
		med, lo, hi := stats(tc.in)
		if med != tc.med || lo != tc.min || hi != tc.max {
			t.Errorf("stats(%v) = %v %v %v, want %v %v %v", tc.in, med, lo, hi, tc.med, tc.min, tc.max)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	id := strings.Repeat("ab12", 16)
	for in, want := range map[string]string{
		"/v1.41/containers/json":             "/containers/json",
		"/v1.41/containers/" + id + "/json":  "/containers/{id}/json",
		"/v1.41/containers/" + id + "/start": "/containers/{id}/start",
		"/v1.41/containers/" + id:            "/containers/{id}",
		"/_ping":                             "/_ping",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%s) = %s, want %s", in, got, want)
		}
	}
}

// Each pair of repetitions runs one order and its reverse, each pair from
// another block.
func TestBlockOrder(t *testing.T) {
	vs := []string{"a", "b", "c"}
	want := [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"b", "c", "a"}, {"a", "c", "b"}}
	for rep, w := range want {
		if got := blockOrder(vs, rep); !slices.Equal(got, w) {
			t.Errorf("repetition %d: %v, want %v", rep, got, w)
		}
	}
	if !slices.Equal(vs, []string{"a", "b", "c"}) {
		t.Errorf("the blocks were reordered in place: %v", vs)
	}
}

func TestRotate(t *testing.T) {
	vs := []string{"a", "b", "c"}
	if got := rotate(vs, 1); !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Errorf("rotate 1 = %v", got)
	}
	if got := rotate(vs, 3); !slices.Equal(got, vs) {
		t.Errorf("rotate 3 = %v", got)
	}
}

// The generated manifests must be valid pods with the port, env value,
// grace period and run label the floor and compose use too.
func TestPodFilesAreValidManifests(t *testing.T) {
	files := podFiles("run1", "hostlet-bench-demo:run1", 10, shapeSingle, []int{20001, 20002}, "v1")
	if _, ok := files["pods/.keep"]; !ok || len(files) != 3 {
		t.Fatalf("files: %v", slices.Sorted(maps.Keys(files)))
	}
	m := decodeOne(t, files["pods/pod-1.yaml"])
	if m.ID != "pod-1" || m.TerminationGracePeriodSeconds != 10 || m.Labels[runLabel] != "run1" {
		t.Errorf("pod: %+v", m)
	}
	c := m.Containers[0]
	if c.Image != "hostlet-bench-demo:run1" || c.Env[0].Name != envName || c.Env[0].Value != "v1" ||
		c.Ports[0].HostPort != 20002 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].HostIP != "127.0.0.1" {
		t.Errorf("container: %+v", c)
	}
}

func decodeOne(t *testing.T, data string) manifest.Manifest {
	t.Helper()
	ms, err := manifest.Decode([]byte(data), manifest.Origin{Source: "bench", File: "pod.yaml"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("decode: %v (%d manifests)", err, len(ms))
	}
	if err := validate.Manifest(ms[0], validate.Options{}); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return ms[0].Manifest
}

func TestComposeFile(t *testing.T) {
	var doc struct {
		Version  string `json:"version"`
		Services map[string]struct {
			Image           string            `json:"image"`
			Restart         string            `json:"restart"`
			StopGracePeriod string            `json:"stop_grace_period"`
			Labels          map[string]string `json:"labels"`
			Environment     map[string]string `json:"environment"`
			Ports           []string          `json:"ports"`
		} `json:"services"`
	}
	if err := yaml.UnmarshalStrict([]byte(composeFile("run1", "img:1", 10, []int{20001}, "v2")["docker-compose.yml"]), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Services["pod-0"]
	if s.Image != "img:1" || s.Restart != "always" || s.StopGracePeriod != "10s" || s.Labels[runLabel] != "run1" ||
		s.Environment[envName] != "v2" || !slices.Equal(s.Ports, []string{"127.0.0.1:20001:8080"}) {
		t.Errorf("service: %+v", s)
	}
	var empty struct {
		Services map[string]any `json:"services"`
	}
	if err := yaml.Unmarshal([]byte(composeFile("run1", "img:1", 10, nil, "")["docker-compose.yml"]), &empty); err != nil || empty.Services == nil || len(empty.Services) != 0 {
		t.Errorf("empty compose file: %v, services %v", err, empty.Services)
	}
}

// The config the driver writes must load as hostlet loads it.
func TestHostletConfigLoads(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := hostletConfig{
		instance: "hbX-wh-n10-r0", stateDir: filepath.Join(dir, "state"), gitURL: "http://127.0.0.1:1/hostlet-webhook.git",
		gitInterval: time.Hour, syncInterval: 10 * time.Second, dockerHost: "unix:///tmp/x.sock", infraImage: "img:1", tokenFile: tok,
	}
	path := filepath.Join(dir, "hostlet.yaml")
	if err := os.WriteFile(path, []byte(c.yaml("127.0.0.1:12345")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Instance != c.instance || cfg.Sync.Interval != 10*time.Second || cfg.Sync.Concurrency != 4 || !cfg.Sync.AllowEmpty ||
		cfg.Docker.Host != c.dockerHost || cfg.Docker.InfraImage != "img:1" || cfg.Listen != "127.0.0.1:12345" ||
		len(cfg.Sources) != 1 || cfg.Sources[0].Interval != time.Hour || cfg.Sources[0].URL != c.gitURL || cfg.Sources[0].Path != "pods" {
		t.Errorf("loaded config: %+v", cfg)
	}
}

func TestReadUsageSelf(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSSBytes <= 0 || u.HWMBytes < u.RSSBytes || u.CPUSeconds < 0 {
		t.Errorf("usage of self: %+v", u)
	}
}

func TestTargets(t *testing.T) {
	r := &results{}
	r.Config.Ns = []int{10}
	r.Config.Reps = 1
	r.Config.Shapes = []string{shapeSingle, shapePair}
	r.Config.FloorParallelism = []int{1, 4, 8}
	run := func(v, shape string, par int, step string, secs float64) runRecord {
		return runRecord{Variant: v, Shape: shape, Parallelism: par, N: 10, Rep: 1, Step: step, Seconds: secs}
	}
	r.Runs = []runRecord{
		run(vFloor, shapeSingle, 1, stepCreate, 14), run(vFloor, shapeSingle, 4, stepCreate, 10), run(vFloor, shapeSingle, 8, stepCreate, 10.5),
		run(vWebhook, shapeSingle, 0, stepCreate, 10.4), run(vPoll, shapeSingle, 0, stepCreate, 12), run(vCompose, shapeSingle, 0, stepCreate, 20),
		run(vFloor, shapeSingle, 4, stepUpdate, 10), run(vWebhook, shapeSingle, 0, stepUpdate, 12),
		// Pairs: the fastest floor is 8 pods at once.
		run(vFloor, shapePair, 1, stepCreate, 30), run(vFloor, shapePair, 4, stepCreate, 22), run(vFloor, shapePair, 8, stepCreate, 20),
		run(vWebhook, shapePair, 0, stepCreate, 21),
		run(vFloor, shapePair, 8, stepUpdate, 20), run(vWebhook, shapePair, 0, stepUpdate, 20),
		run(vFloor, shapePair, 8, stepRemove, 10), run(vWebhook, shapePair, 0, stepRemove, 10.4),
	}
	r.APICalls = &apiCalls{Syncs: 10, Calls: 10, PerSync: 1}
	r.summarize()
	met := map[string]bool{}
	for _, tr := range r.Targets {
		met[tr.Target] = tr.Met
	}
	for target, want := range map[string]bool{
		"hostlet (webhook) ÷ fastest floor ≤ 1.05 at every step, single pods, N=10":                       false,
		"hostlet (webhook) ÷ fastest floor ≤ 1.05 at every step, pair pods, N=10":                         true,
		"hostlet (webhook) ÷ floor ≤ 1.15, create, N=10":                                                  true,
		"hostlet (webhook) ÷ floor ≤ 1.15, update, N=10":                                                  false,
		"hostlet faster than the compose loop, create, N=10 (both timed from the push: hostlet 1 s poll)": true,
		"exactly 1 Docker API call per no-op sync":                                                        true,
	} {
		got, ok := met[target]
		if !ok || got != want {
			t.Errorf("target %q: met=%v (present %v), want %v; all: %v", target, got, ok, want, met)
		}
	}
	md := r.markdown()
	for _, row := range []string{
		"| 10 | create | 14.00 | 10.00 | 10.50 | 10.00 (×4) | 10.40 | 12.00 | 20.00 | 1.04 | 1.20 | 0.52 | 0.60 |",
		"| 10 | create | 30.00 | 22.00 | 20.00 | 20.00 (×8) | 21.00 | – | 1.05 | – |",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("markdown has no row %s:\n%s", row, md)
		}
	}
}

// The ratios are to the fastest floor of the row, of the floor and
// floor-late-rm at any parallelism; the tables show floor-late-rm's
// columns beside the floor's, and the engine and Compose versions.
func TestLateRemoveFloorRatios(t *testing.T) {
	r := &results{}
	r.Config.Ns = []int{10}
	r.Config.Reps = 1
	r.Config.Shapes = []string{shapeSingle}
	r.Config.FloorParallelism = []int{4, 8}
	r.Config.Variants = []string{vFloor, vWebhook, vHostletCompose, vComposeUp, vFloorLateRm}
	r.Machine = machine{DockerVersion: "28.5.2+dfsg4", DockerAPI: "1.51", StorageDriver: "overlay2", ComposeVersion: "2.40.3"}
	run := func(v string, par int, step string, secs float64) runRecord {
		return runRecord{Variant: v, Shape: shapeSingle, Parallelism: par, N: 10, Rep: 1, Step: step, Seconds: secs}
	}
	r.Runs = []runRecord{
		run(vFloor, 4, stepCreate, 10), run(vFloor, 8, stepCreate, 11), run(vFloorLateRm, 4, stepCreate, 10.5), run(vFloorLateRm, 8, stepCreate, 12),
		run(vWebhook, 0, stepCreate, 10.2), run(vHostletCompose, 0, stepCreate, 11), run(vComposeUp, 0, stepCreate, 12),
		// The update: floor-late-rm at 8 pods at once is the fastest.
		run(vFloor, 4, stepUpdate, 12), run(vFloor, 8, stepUpdate, 11), run(vFloorLateRm, 4, stepUpdate, 9), run(vFloorLateRm, 8, stepUpdate, 8),
		run(vWebhook, 0, stepUpdate, 8.8), run(vHostletCompose, 0, stepUpdate, 10), run(vComposeUp, 0, stepUpdate, 12.5),
	}
	r.summarize()
	for _, rr := range r.Ratios {
		switch rr.Step {
		case stepCreate:
			if rr.FloorVariant != vFloor || rr.FloorParallelism != 4 || rr.FloorSeconds != 10 || math.Abs(rr.WebhookOverFloor-1.02) > 1e-9 {
				t.Errorf("create: %+v", rr)
			}
		case stepUpdate:
			if rr.FloorVariant != vFloorLateRm || rr.FloorParallelism != 8 || rr.FloorSeconds != 8 || math.Abs(rr.WebhookOverFloor-1.1) > 1e-9 || math.Abs(rr.ComposeFileOverFloor-1.25) > 1e-9 {
				t.Errorf("update: %+v", rr)
			}
		}
	}
	md := r.markdown()
	for _, want := range []string{
		"Engine: Docker 28.5.2+dfsg4 (API 1.51, overlay2); docker-compose 2.40.3.",
		"| N | step | floor (API, 4 workers) | floor (API, 8 workers) | floor (API, late rm, 4 workers) | floor (API, late rm, 8 workers) | fastest floor |",
		"| 10 | update | 12.00 | 11.00 | 9.00 | 8.00 | 8.00 (late rm ×8) | 8.80 | – | 1.10 | – |",
		"| 10 | create | 10.00 | 11.00 | 10.50 | 12.00 | 10.00 (×4) | 10.20 | – | 1.02 | – |",
		"| N | step | fastest floor | fastest floor with the network | hostlet, Compose file (webhook) | docker-compose 2.40.3 up -d |",
		"its remove step is `down --remove-orphans`",
		"| 10 | update | 8.00 (late rm ×8) | – | 10.00 | 12.50 | 1.25 | – | 0.80 |",
		"hostlet (webhook) ÷ fastest floor ≤ 1.05 at every step, single pods, N=10 | create 1.02 (floor ×4), update 1.10 (floor late rm ×8), remove –",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown has no %s:\n%s", want, md)
		}
	}
}

// Compose 1.29 takes a file without services to remove the project's
// containers; Compose v2 refuses it, so its remove step is down.
func TestComposeArgs(t *testing.T) {
	for _, tc := range []struct {
		version string
		empty   bool
		want    string
	}{
		{"1.29.2", false, "-p P up -d --remove-orphans"},
		{"1.29.2", true, "-p P up -d --remove-orphans"},
		{"", true, "-p P up -d --remove-orphans"},
		{"2.40.3", false, "-p P up -d --remove-orphans"},
		{"2.40.3", true, "-p P down --remove-orphans"},
	} {
		if got := strings.Join(composeArgs(tc.version, "P", tc.empty), " "); got != tc.want {
			t.Errorf("%s, empty %v: %s, want %s", tc.version, tc.empty, got, tc.want)
		}
	}
}

// Earlier results files (no shapes, a floor of 4 workers) still render,
// with the figures bench/results/history.md quotes.
func TestRenderEarlierResults(t *testing.T) {
	md, err := renderFile("results/2026-12-02-3.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| 50 | create | 27.62 (25.35–31.79) | 27.62 (×4) | 29.50 (27.37–29.79) | 33.86 (28.98–35.36) | 45.52 (44.28–52.15) | 1.07 | 1.23 | 0.65 | 0.74 |",
		"| 1 | remove | 0.31 (0.31–0.32) | 0.31 (×1) |",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("no row %s in:\n%s", row, md)
		}
	}
	files, _ := filepath.Glob("results/*.json")
	for _, f := range files {
		if _, err := renderFile(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestDefaultOutNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	var got []string
	for range 3 {
		out := defaultOut(dir, day)
		got = append(got, filepath.Base(out))
		if err := os.WriteFile(out, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"2026-12-02.json", "2026-12-02-2.json", "2026-12-02-3.json"}
	if !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}

// The idle share is read from /proc/stat's cpu line (idle and iowait of
// all the time counted); a line that is not there is an error.
func TestIdleShare(t *testing.T) {
	a, err := parseCPUTimes("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4 5\n")
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseCPUTimes("cpu  200 0 200 1400 200 0 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := idleShare(a, b); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("idle share %v, want 0.8", got)
	}
	if got := idleShare(b, b); got != 1 {
		t.Errorf("idle share with no time passed %v, want 1", got)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 x 4 5\n"} {
		if _, err := parseCPUTimes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The proxy times each call by method and path (streams left out), and
// a take forgets what it returned; the table puts the longest in all
// first.
func TestCallTimes(t *testing.T) {
	p := &countingProxy{times: map[string]*callTimes{}}
	t0 := time.Unix(1000, 0)
	p.took("POST /containers/{id}/stop", t0, t0.Add(300*time.Millisecond))
	p.took("POST /containers/{id}/stop", t0, t0.Add(100*time.Millisecond))
	p.took("DELETE /containers/{id}", t0, t0.Add(500*time.Millisecond))
	got, spans := p.takeTimes()
	if len(spans) != 3 {
		t.Errorf("%d spans, want 3", len(spans))
	}
	if stop := got["POST /containers/{id}/stop"]; stop.N != 2 || math.Abs(stop.Total-0.4) > 1e-9 || math.Abs(stop.Max-0.3) > 1e-9 {
		t.Errorf("stop %+v", stop)
	}
	if again, spans := p.takeTimes(); len(again) != 0 || len(spans) != 0 {
		t.Errorf("a second take returned %v, %v", again, spans)
	}
	table := callTable(got)
	want := "| DELETE /containers/{id} | 1 | 0.50 | 500.0 | 500.0 |\n| POST /containers/{id}/stop | 2 | 0.40 | 200.0 | 300.0 |\n"
	if !strings.HasSuffix(table, want) {
		t.Errorf("table:\n%s\nwant it to end with:\n%s", table, want)
	}
}

// A step's timeline counts the calls begun in it, from the first call's
// start to the last one's end, and the time some call was in flight
// (overlapping calls counted once, gaps not at all).
func TestStepTimelinePlacesTheCallsBegunInTheStep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []callSpan{
		{start: at(-50), end: at(20), change: true},  // before the step: left out
		{start: at(400), end: at(700), change: true}, // overlaps the next; the first change
		{start: at(100), end: at(500)},               // first
		{start: at(900), end: at(1000)},              // after a gap
		{start: at(950), end: at(1200)},              // ends last
		{start: at(2000), end: at(2100)},             // after the step: left out
	}
	got := timeline(spans, t0, 1.5)
	want := stepTimeline{Seconds: 1.5, Calls: 4, FirstCall: 0.1, FirstChange: 0.4, LastEnd: 1.2, Busy: 0.9}
	const eps = 1e-9
	if got.Calls != want.Calls || math.Abs(got.FirstCall-want.FirstCall) > eps || math.Abs(got.FirstChange-want.FirstChange) > eps ||
		math.Abs(got.LastEnd-want.LastEnd) > eps || math.Abs(got.Busy-want.Busy) > eps {
		t.Errorf("timeline %+v, want %+v", got, want)
	}
	if empty := timeline(nil, t0, 1); empty.Calls != 0 || empty.Busy != 0 {
		t.Errorf("no calls: %+v", empty)
	}
}

// A ratio within each repetition sets each side's figure against the
// other's of the same repetition, so a slow stretch of the engine that
// fell on one repetition does not set one side's slow figure against the
// other's fast one, as the ratio of the medians can.
func TestPairedRatiosAreTakenWithinARepetition(t *testing.T) {
	r := &results{}
	r.Config.Ns = []int{10}
	r.Config.Reps = 3
	r.Config.Shapes = []string{shapeSingle}
	r.Config.FloorParallelism = []int{4}
	run := func(v string, par, rep int, secs float64) runRecord {
		return runRecord{Variant: v, Shape: shapeSingle, Parallelism: par, N: 10, Rep: rep, Step: stepCreate, Seconds: secs}
	}
	r.Runs = []runRecord{
		// Repetition 2 is a slow stretch for both sides.
		run(vFloor, 4, 1, 10), run(vWebhook, 0, 1, 10.4), run(vHostletCompose, 0, 1, 12), run(vComposeUp, 0, 1, 12.5),
		run(vFloor, 4, 2, 20), run(vWebhook, 0, 2, 20.6), run(vHostletCompose, 0, 2, 24), run(vComposeUp, 0, 2, 23),
		run(vWebhook, 0, 3, 10.2), run(vFloor, 4, 3, 11),
		// floor-late-rm makes the floor's calls in a create: the same
		// work measured twice.
		run(vFloorLateRm, 4, 1, 10.5), run(vFloorLateRm, 4, 2, 19),
	}
	r.summarize()
	rr := r.Ratios[0]
	for _, tc := range []struct {
		name   string
		got    *pairedRatio
		perRep []float64
		median float64
		atMost int
	}{
		{"webhook ÷ floor", rr.PairedWebhookOverFloor, []float64{1.04, 1.03, 10.2 / 11}, 1.03, 3},
		{"Compose file ÷ up -d", rr.PairedComposeFileOverUp, []float64{0.96, 24.0 / 23}, (0.96 + 24.0/23) / 2, 1},
		{"Compose file ÷ native", rr.PairedComposeFileOverNative, []float64{12 / 10.4, 24 / 20.6}, (12/10.4 + 24/20.6) / 2, 0},
		// Within 1/1.05–1.05 either way: 1.05, not 0.95.
		{"the same calls twice", rr.PairedSameWork, []float64{1.05, 0.95}, 1, 1},
	} {
		if tc.got == nil {
			t.Fatalf("%s: no paired ratio", tc.name)
		}
		if len(tc.got.PerRep) != len(tc.perRep) || math.Abs(tc.got.Median-tc.median) > 1e-9 || tc.got.AtMost != tc.atMost {
			t.Errorf("%s: %+v, want per repetition %v, median %v, %d at most the target", tc.name, *tc.got, tc.perRep, tc.median, tc.atMost)
			continue
		}
		for i, x := range tc.perRep {
			if math.Abs(tc.got.PerRep[i]-x) > 1e-9 {
				t.Errorf("%s: repetition %d %v, want %v", tc.name, i+1, tc.got.PerRep[i], x)
			}
		}
	}
	md := r.markdown()
	if want := "| single | 10 | create | 1.03 (3 of 3: 1.04 1.03 0.93) | 1.00 (1 of 2: 0.96 1.04) | 1.16 (0 of 2: 1.15 1.17) | 1.00 (1 of 2: 1.05 0.95) |"; !strings.Contains(md, want) {
		t.Errorf("markdown has no %s:\n%s", want, md)
	}
}
