package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// made is one container as the engine is asked to make it, in the terms
// both sides share: what the floor sets on Docker's create request and
// what hostlet's runtime.dockerConfig derives from its spec.
type made struct {
	Slot, Image  string
	Entrypoint   []string
	Env          []string
	Ports        []string
	Network      string // "" or "container:<slot>"
	Restart      string
	StopTimeout  int
	ExposedPorts int
}

// call is one engine call: "create app", "start POD", ...
type call struct {
	op, slot string
	made     *made
}

func (c call) String() string { return c.op + " " + c.slot }

// hostletSide wraps the in-memory engine and records, per slot, the calls
// hostlet's planner and applier make.
type hostletSide struct {
	*synctest.Fake
	slots map[string]string // ID -> slot
	calls []call
}

func (h *hostletSide) Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	id, err := h.Fake.Create(ctx, spec)
	slot := spec.Labels[hruntime.LabelContainer]
	h.slots[id] = slot
	m := &made{Slot: slot, Image: spec.Image, Entrypoint: spec.Command, Env: spec.Env, Restart: spec.RestartPolicy}
	if spec.StopTimeout > 0 {
		m.StopTimeout = int(math.Ceil(spec.StopTimeout.Seconds()))
	}
	if id, ok := strings.CutPrefix(spec.NetworkMode, "container:"); ok {
		m.Network = "container:" + h.slots[id]
	} else {
		for _, p := range spec.Ports {
			m.Ports = append(m.Ports, fmt.Sprintf("%s:%d->%d/%s", p.HostIP, p.HostPort, p.ContainerPort, strings.ToLower(p.Protocol)))
		}
		m.ExposedPorts = len(spec.Ports)
	}
	slices.Sort(m.Ports)
	h.calls = append(h.calls, call{"create", slot, m})
	return id, err
}

func (h *hostletSide) Start(ctx context.Context, id string) error {
	h.calls = append(h.calls, call{op: "start", slot: h.slots[id]})
	return h.Fake.Start(ctx, id)
}

// floorSide records the floor's calls: by slot (calls), and by container
// name with the network a container joins (named: "create NAME [in
// NAME]", "start NAME", ...).
type floorSide struct {
	slots map[string]string
	calls []call
	next  int
	names map[string]string // ID -> name
	named []string
}

func (f *floorSide) create(_ context.Context, name string, cfg *container.Config, host *container.HostConfig) (string, error) {
	slot := name[strings.LastIndexByte(name, '-')+1:]
	if slot == "infra" {
		slot = hruntime.InfraName
	}
	f.next++
	id := fmt.Sprintf("f%d", f.next)
	f.slots[id] = slot
	if f.names == nil {
		f.names = map[string]string{}
	}
	f.names[id] = name
	joins := ""
	if host.NetworkMode.IsContainer() {
		joins = " in " + f.names[host.NetworkMode.ConnectedContainer()]
	}
	f.named = append(f.named, "create "+name+joins)
	m := &made{Slot: slot, Image: cfg.Image, Entrypoint: cfg.Entrypoint, Env: cfg.Env, Restart: string(host.RestartPolicy.Name), ExposedPorts: len(cfg.ExposedPorts)}
	if cfg.StopTimeout != nil {
		m.StopTimeout = *cfg.StopTimeout
	}
	if host.NetworkMode.IsContainer() {
		m.Network = "container:" + f.slots[host.NetworkMode.ConnectedContainer()]
	}
	for p, bs := range host.PortBindings {
		for _, b := range bs {
			m.Ports = append(m.Ports, fmt.Sprintf("%s:%s->%s", b.HostIP, b.HostPort, p))
		}
	}
	slices.Sort(m.Ports)
	f.calls = append(f.calls, call{"create", slot, m})
	return id, nil
}

func (f *floorSide) start(_ context.Context, id string) error {
	f.calls = append(f.calls, call{op: "start", slot: f.slots[id]})
	f.named = append(f.named, "start "+f.names[id])
	return nil
}

func (f *floorSide) stop(_ context.Context, id string, timeout int) error {
	f.calls = append(f.calls, call{op: "stop", slot: f.slots[id]})
	f.named = append(f.named, fmt.Sprintf("stop %s %ds", f.names[id], timeout))
	return nil
}

func (f *floorSide) remove(_ context.Context, id string) error {
	f.calls = append(f.calls, call{op: "remove", slot: f.slots[id]})
	f.named = append(f.named, "remove "+f.names[id])
	return nil
}

// The floor makes, for one pod of each shape, exactly the containers
// hostlet's planner and applier make (image, entrypoint, env, ports,
// network mode, restart policy, stop timeout), with the same calls in the
// same order, at create, update and remove. hostlet stops a container
// only when it is running; all of them are, so its calls are the floor's.
// Its update is that of the floor (the old containers removed before the
// new ones are created) or that of floor-late-rm (removed after the new
// ones started), whichever hostlet does: the test holds for both.
func TestFloorMakesHostletsContainers(t *testing.T) {
	const image, pause = "hostlet-bench-demo:run1", "hostlet-bench-pause:run1"
	for _, shape := range allShapes {
		t.Run(shape, func(t *testing.T) {
			ports := []int{20001, 20002}[:portsPerPod(shape)]
			ctx := context.Background()
			log := slog.New(slog.DiscardHandler)

			h := &hostletSide{Fake: synctest.NewFake(), slots: map[string]string{}}
			opts := hsync.ApplyOptions{Instance: "bench", InfraImage: pause, Concurrency: 1}
			apply := func(value string) []call {
				var pods []hsync.Pod
				if value != "" {
					m := decodeOne(t, podFiles("run1", image, 10, shape, ports, value)["pods/pod-0.yaml"])
					pods = []hsync.Pod{hsync.NewPod(m, "bench", "rev")}
				}
				current, err := h.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// Stop and Remove reach the Fake directly: they are read
				// from its call log.
				h.calls = nil
				h.Reset()
				for _, r := range hsync.Apply(ctx, h, hsync.MakePlan(pods, current, hsync.PlanOptions{Prune: true}), opts, log) {
					if r.Err != nil {
						t.Fatalf("hostlet apply: %v", r.Err)
					}
				}
				return mergeFakeCalls(h)
			}

			sides := map[string]*floorSide{vFloor: {slots: map[string]string{}}, vFloorLateRm: {slots: map[string]string{}}}
			floors := map[string]*floor{}
			for v, fs := range sides {
				floors[v] = newFloor(fs, "run1", image, pause, shape, 10, 1, ports, "o")
				floors[v].lateRemove = v == vFloorLateRm
			}
			steps := []struct {
				name  string
				value string
				floor func(f *floor) error
			}{
				{stepCreate, "v1", func(f *floor) error { return f.create(ctx, "v1") }},
				{stepUpdate, "v2", func(f *floor) error { return f.update(ctx, "v2") }},
				{stepRemove, "", func(f *floor) error { return f.remove(ctx) }},
			}
			for _, s := range steps {
				want := apply(s.value)
				var same []string
				for _, v := range []string{vFloor, vFloorLateRm} {
					fs := sides[v]
					fs.calls = nil
					if err := s.floor(floors[v]); err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(fs.calls) != fmt.Sprint(want) {
						if s.name != stepUpdate {
							t.Fatalf("%s: %s calls\n  %v\nhostlet calls\n  %v", s.name, v, fs.calls, want)
						}
						continue
					}
					same = append(same, v)
					checkMade(t, s.name, fs.calls, want)
				}
				if len(same) == 0 {
					t.Fatalf("%s: floor calls\n  %v\nfloor-late-rm calls\n  %v\nhostlet calls\n  %v", s.name, sides[vFloor].calls, sides[vFloorLateRm].calls, want)
				}
				t.Logf("%s: hostlet's calls are those of %v", s.name, same)
			}
			if shape == shapePair {
				for v, fs := range sides {
					if n := len(fs.slots); n != 5 {
						t.Errorf("pair, %s: %d containers made in all, want 5 (infra, 2 apps, 2 apps again)", v, n)
					}
				}
			}
		})
	}
}

// checkMade compares the containers the floor's calls got make with those
// hostlet's calls want make, call by call.
func checkMade(t *testing.T, step string, got, want []call) {
	t.Helper()
	for i := range want {
		if want[i].made == nil {
			continue
		}
		if g, w := fmt.Sprintf("%+v", *got[i].made), fmt.Sprintf("%+v", *want[i].made); g != w {
			t.Errorf("%s: %s:\nfloor   %s\nhostlet %s", step, want[i], g, w)
		}
	}
}

// mergeFakeCalls returns h's recorded creates and starts with the stops
// and removes of the Fake's call log, in the order they were made. Calls
// that change no container's state are left out, as the floor makes none:
// the restart policy's change of a container a recreate keeps, and the
// stop of a container already stopped (the second a recreate makes,
// after that change).
func mergeFakeCalls(h *hostletSide) []call {
	var out []call
	ours := h.calls
	stopped := map[string]bool{}
	for _, c := range h.Calls() {
		switch c.Method {
		case "Create", "Start":
			if c.Method == "Start" {
				delete(stopped, c.Arg)
			}
			out = append(out, ours[0])
			ours = ours[1:]
		case "Stop":
			if stopped[c.Arg] {
				continue
			}
			stopped[c.Arg] = true
			out = append(out, call{op: "stop", slot: h.slots[c.Arg]})
		case "Remove":
			out = append(out, call{op: "remove", slot: h.slots[c.Arg]})
		}
	}
	return out
}

// floor-late-rm's update stops each pod's old app containers (with the
// pod's grace period) and creates and starts its new ones under names of
// their own (in the kept infra container's namespace, for a pair), pod
// after pod; then it removes the old ones, pod after pod (one worker). Its
// create and remove steps are the floor's.
func TestFloorLateRemoveOrder(t *testing.T) {
	for _, tc := range []struct {
		shape string
		pods  int
		// create, update and remove are the calls of each step, by
		// container name (owner "o").
		create, update, remove []string
	}{
		{shapeSingle, 1,
			[]string{"create hbench-o-0-v1-app", "start hbench-o-0-v1-app"},
			[]string{"stop hbench-o-0-v1-app 10s",
				"create hbench-o-0-v2-app", "start hbench-o-0-v2-app",
				"remove hbench-o-0-v1-app"},
			[]string{"stop hbench-o-0-v2-app 10s", "remove hbench-o-0-v2-app"}},
		{shapeSingle, 2,
			[]string{"create hbench-o-0-v1-app", "start hbench-o-0-v1-app",
				"create hbench-o-1-v1-app", "start hbench-o-1-v1-app"},
			[]string{"stop hbench-o-0-v1-app 10s", "create hbench-o-0-v2-app", "start hbench-o-0-v2-app",
				"stop hbench-o-1-v1-app 10s", "create hbench-o-1-v2-app", "start hbench-o-1-v2-app",
				"remove hbench-o-0-v1-app", "remove hbench-o-1-v1-app"},
			[]string{"stop hbench-o-0-v2-app 10s", "remove hbench-o-0-v2-app",
				"stop hbench-o-1-v2-app 10s", "remove hbench-o-1-v2-app"}},
		{shapePair, 1,
			[]string{"create hbench-o-0-infra", "start hbench-o-0-infra",
				"create hbench-o-0-v1-app in hbench-o-0-infra", "start hbench-o-0-v1-app",
				"create hbench-o-0-v1-side in hbench-o-0-infra", "start hbench-o-0-v1-side"},
			[]string{"stop hbench-o-0-v1-app 10s", "stop hbench-o-0-v1-side 10s",
				"create hbench-o-0-v2-app in hbench-o-0-infra", "start hbench-o-0-v2-app",
				"create hbench-o-0-v2-side in hbench-o-0-infra", "start hbench-o-0-v2-side",
				"remove hbench-o-0-v1-app", "remove hbench-o-0-v1-side"},
			[]string{"stop hbench-o-0-v2-app 10s", "remove hbench-o-0-v2-app",
				"stop hbench-o-0-v2-side 10s", "remove hbench-o-0-v2-side",
				"stop hbench-o-0-infra 2s", "remove hbench-o-0-infra"}},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.shape, tc.pods), func(t *testing.T) {
			ctx := context.Background()
			var ports []int
			for i := range tc.pods * portsPerPod(tc.shape) {
				ports = append(ports, 20001+i)
			}
			late, plain := &floorSide{slots: map[string]string{}}, &floorSide{slots: map[string]string{}}
			fl := newFloor(late, "run1", "img:1", "pause:1", tc.shape, 10, 1, ports, "o")
			fl.lateRemove = true
			fp := newFloor(plain, "run1", "img:1", "pause:1", tc.shape, 10, 1, ports, "o")
			for _, s := range []struct {
				name string
				want []string
				run  func(f *floor) error
			}{
				{stepCreate, tc.create, func(f *floor) error { return f.create(ctx, "v1") }},
				{stepUpdate, tc.update, func(f *floor) error { return f.update(ctx, "v2") }},
				{stepRemove, tc.remove, func(f *floor) error { return f.remove(ctx) }},
			} {
				late.named, plain.named = nil, nil
				if err := s.run(fl); err != nil {
					t.Fatal(err)
				}
				if err := s.run(fp); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(late.named, s.want) {
					t.Errorf("%s: floor-late-rm calls\n  %q\nwant\n  %q", s.name, late.named, s.want)
				}
				// Only the update differs from the floor's.
				if same := slices.Equal(late.named, plain.named); same != (s.name != stepUpdate) {
					t.Errorf("%s: floor-late-rm\n  %q\nfloor\n  %q", s.name, late.named, plain.named)
				}
			}
		})
	}
}

// The new containers' names carry the value: floor-late-rm refuses an
// update to the value the pods have before any call.
func TestFloorLateRemoveSameValue(t *testing.T) {
	fs := &floorSide{slots: map[string]string{}}
	f := newFloor(fs, "run1", "img:1", "pause:1", shapeSingle, 10, 1, []int{20001}, "o")
	f.lateRemove = true
	if err := f.create(context.Background(), "v1"); err != nil {
		t.Fatal(err)
	}
	fs.named = nil
	if err := f.update(context.Background(), "v1"); err == nil || len(fs.named) > 0 {
		t.Errorf("update to the pods' value: %v, calls %q; want an error and no call", err, fs.named)
	}
}

func TestBlocksOf(t *testing.T) {
	o := &options{floorPar: []int{1, 4, 8}, variants: map[string]bool{vFloor: true, vWebhook: true, vPoll: true, vCompose: true, vFloorLateRm: true}}
	for _, tc := range []struct {
		shape string
		n     int
		want  string
	}{
		{shapeSingle, 1, "[floor×1 hostlet-webhook hostlet-poll compose floor-late-rm×1]"},
		{shapeSingle, 2, "[floor×1 floor×2 hostlet-webhook hostlet-poll compose floor-late-rm×1 floor-late-rm×2]"},
		{shapePair, 10, "[floor×1 floor×4 floor×8 hostlet-webhook hostlet-poll floor-late-rm×1 floor-late-rm×4 floor-late-rm×8]"},
		{shapePair, 200, "[floor×1 floor×4 floor×8 hostlet-webhook hostlet-poll floor-late-rm×1 floor-late-rm×4 floor-late-rm×8]"},
	} {
		if got := fmt.Sprint(blocksOf(o, tc.shape, tc.n)); got != tc.want {
			t.Errorf("%s N=%d: %s, want %s", tc.shape, tc.n, got, tc.want)
		}
	}
}

// Pair pods are valid manifests whose second container listens on its
// own port, both published.
func TestPairPodFiles(t *testing.T) {
	files := podFiles("run1", "img:1", 10, shapePair, []int{20001, 20002, 20003, 20004}, "v1")
	if len(files) != 3 {
		t.Fatalf("files: %v", slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		}))
	}
	m := decodeOne(t, files["pods/pod-1.yaml"])
	if len(m.Containers) != 2 {
		t.Fatalf("containers: %+v", m.Containers)
	}
	app, side := m.Containers[0], m.Containers[1]
	if app.Name != "app" || app.Ports[0].HostPort != 20003 || app.Ports[0].ContainerPort != 8080 ||
		side.Name != "side" || side.Ports[0].HostPort != 20004 || side.Ports[0].ContainerPort != 8081 ||
		!slices.Equal(envStrings(side.Env), []string{envName + "=v1", "LISTEN=:8081"}) {
		t.Errorf("containers: %+v", m.Containers)
	}
}

func envStrings(env []manifest.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}
