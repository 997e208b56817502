package sync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// netPod is a pod on the network shop_default (alias web) and the
// external network corp; with side it has a second container (and so an
// infra container holding the network namespace).
func netPod(t *testing.T, id string, side bool) hsync.Pod {
	y := `
version: v1beta1
id: ` + id + `
networks:
  - {name: shop_default, aliases: [web]}
  - {name: corp, external: true}
containers:
  - name: app
    image: example.org/app:1
`
	if side {
		y += "  - name: side\n    image: example.org/side:1\n"
	}
	return decodePod(t, y)
}

// specsOf returns the specs of the pod's containers by slot.
func specsOf(t *testing.T, fake *synctest.Fake, pod string) map[string]hruntime.ContainerSpec {
	t.Helper()
	list, _ := fake.List(t.Context())
	out := map[string]hruntime.ContainerSpec{}
	for _, c := range list {
		if c.Pod() == pod {
			spec, _ := fake.Spec(c.ID)
			out[c.Slot()] = spec
		}
	}
	return out
}

func TestPodNetworks(t *testing.T) {
	tests := []struct {
		name   string
		side   bool
		holder string // the slot that joins the networks
	}{
		{"one container holds the pod's network", false, "app"},
		{"the infra container holds it", true, hruntime.InfraName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := synctest.NewFake()
			fake.AddNetwork("corp")
			s := newFakeSyncer(t, fake)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{netPod(t, "web", tt.side)}, Ready: true})
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := fake.Networks(); !slices.Equal(got, []string{"corp", "shop_default"}) {
				t.Fatalf("networks %v, want corp and shop_default", got)
			}
			for slot, spec := range specsOf(t, fake, "web") {
				var names []string
				for _, n := range spec.Networks {
					names = append(names, n.Name+"("+strings.Join(n.Aliases, ",")+")")
				}
				want := ""
				if slot == tt.holder {
					want = "shop_default(web) corp()"
				}
				if got := strings.Join(names, " "); got != want {
					t.Errorf("%s joins %q, want %q", slot, got, want)
				}
				if slot == tt.holder && spec.Labels[hsync.LabelNetworks] != "shop_default" {
					t.Errorf("%s: label %s = %q, want shop_default (not the external corp)", slot, hsync.LabelNetworks, spec.Labels[hsync.LabelNetworks])
				}
			}

			// The pod removed: the network hostlet made goes, the
			// external one stays.
			s.SetDesired(hsync.Desired{Ready: true})
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := fake.Networks(); !slices.Equal(got, []string{"corp"}) {
				t.Errorf("networks after the removal %v, want corp", got)
			}
		})
	}
}

// A network two pods share stays while one of them is left.
func TestSharedNetworkStaysWhileUsed(t *testing.T) {
	fake := synctest.NewFake()
	fake.AddNetwork("corp")
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{netPod(t, "web", false), netPod(t, "api", false)}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{netPod(t, "api", false)}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := fake.Networks(); !slices.Equal(got, []string{"corp", "shop_default"}) {
		t.Errorf("networks %v, want both while api uses shop_default", got)
	}
}

// An external network that does not exist fails the pod, naming it; a
// network left by an earlier hostlet is removed by the first ready sync.
func TestMissingExternalNetworkAndLeftovers(t *testing.T) {
	fake := synctest.NewFake()
	if err := fake.EnsureNetwork(t.Context(), hruntime.NetworkSpec{Name: "old_default"}, nil); err != nil {
		t.Fatal(err)
	}
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{netPod(t, "web", false)}, Ready: true})
	_ = s.SyncOnce(t.Context())
	rep := s.Report()
	if len(rep.Pods) != 1 || rep.Pods[0].Reason != hsync.ReasonCreate || !strings.Contains(rep.Pods[0].Message, `network "corp" is declared external and does not exist`) {
		t.Errorf("pod status %+v, want %s naming the network", rep.Pods, hsync.ReasonCreate)
	}
	if slices.Contains(fake.Networks(), "old_default") {
		t.Errorf("networks %v: old_default, left by an earlier hostlet, is still there", fake.Networks())
	}
}

// A pod's named Docker volume is made on first use, outlives a recreate
// and the pod's removal, and an external one must exist; an empty-dir
// volume goes with its pod.
func TestDockerVolumesOutliveTheirPods(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	pod := func(v string) hsync.Pod {
		return decodePod(t, `
version: v1beta1
id: db
labels: {v: "`+v+`"}
volumes:
  - {name: data, dockerVolume: shop_data}
  - {name: scratch}
containers:
  - name: db
    image: example.org/db:1
    volumeMounts: [{name: data, mountPath: /data}, {name: scratch, mountPath: /tmp}]
`)
	}
	volumes := func() []string {
		names, _ := fake.ListVolumes(t.Context())
		var out []string
		for _, n := range names {
			if n == "shop_data" {
				out = append(out, n)
			} else {
				out = append(out, "scratch")
			}
		}
		return out
	}
	for _, v := range []string{"1", "2"} { // create, then recreate
		s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod(v)}, Ready: true})
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := volumes(); !slices.Equal(got, []string{"scratch", "shop_data"}) {
			t.Fatalf("v%s: volumes %v, want the pod's scratch and shop_data", v, got)
		}
	}
	spec := specsOf(t, fake, "db")["db"]
	if len(spec.Mounts) != 2 || spec.Mounts[0].Source != "shop_data" || spec.Mounts[0].Type != hruntime.MountVolume {
		t.Errorf("mounts %+v, want shop_data first", spec.Mounts)
	}
	s.SetDesired(hsync.Desired{Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := volumes(); !slices.Equal(got, []string{"shop_data"}) {
		t.Errorf("after the removal: volumes %v, want shop_data only (kept)", got)
	}

	// An external volume that is not there fails the pod, naming it.
	ext := decodePod(t, `
version: v1beta1
id: ext
volumes: [{name: data, dockerVolume: corp-data, external: true}]
containers: [{name: app, image: example.org/app:1, volumeMounts: [{name: data, mountPath: /data}]}]
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{ext}, Ready: true})
	_ = s.SyncOnce(t.Context())
	if rep := s.Report(); len(rep.Pods) != 1 || !strings.Contains(rep.Pods[0].Message, `volume "corp-data"`) {
		t.Errorf("status %+v, want the pod failed naming corp-data", rep.Pods)
	}
}

// A pod that depends on another waits (Pending, WaitingForDependency)
// until that one runs, healthy when asked; what runs of it meanwhile is
// left alone.
func TestDependsOnWaits(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	db := decodePod(t, "version: v1beta1\nid: db\ncontainers: [{name: db, image: example.org/db:1, healthcheck: {command: [/ok]}}]\n")
	web := decodePod(t, "version: v1beta1\nid: web\ndependsOn: [{pod: db, condition: Healthy}]\ncontainers: [{name: web, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{db, web}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	status := func(id string) hsync.PodStatus {
		for _, p := range s.Report().Pods {
			if p.ID == id {
				return p
			}
		}
		return hsync.PodStatus{}
	}
	// db was created in that sync: web waits for it.
	if st := status("web"); st.Phase != hsync.PhasePending || st.Reason != hsync.ReasonWaiting || !strings.Contains(st.Message, "pod db to be healthy (it is being changed)") {
		t.Fatalf("web: %s %s %q, want Pending, waiting for db", st.Phase, st.Reason, st.Message)
	}
	if len(specsOf(t, fake, "web")) != 0 {
		t.Fatal("web was created before db was healthy")
	}
	// db runs, its healthcheck still starting: web waits.
	fake.SetHealth("db", "db", hruntime.HealthStarting)
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := status("web"); !strings.Contains(st.Message, "container db is running (starting)") {
		t.Fatalf("web: %q, want waiting for db's healthcheck", st.Message)
	}
	fake.SetHealth("db", "db", hruntime.HealthHealthy)
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := status("web"); st.Phase != hsync.PhaseRunning || len(specsOf(t, fake, "web")) != 1 {
		t.Errorf("web: %s %q once db is healthy, want Running", st.Phase, st.Message)
	}
}

// callsOf counts fake's calls of method.
func callsOf(fake *synctest.Fake, method string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// TestPruneKeepsTheNetworkOfAWaitingPod (second outside review): a pod
// whose new revision drops its network n1 but must wait (dependsOn not
// met; equally while it backs off or pulls) keeps its old container on n1
// ("what runs of it keeps running"), yet pruneNetworks takes the old
// container's io.hostlet.networks label as "no longer used" on every sync:
// RemoveNetwork(n1) is called each time (2 engine calls on the real
// engine, refused while the container runs, and succeeding when it is
// stopped or between two restarts, so it cannot start again).
func TestPruneKeepsTheNetworkOfAWaitingPod(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	v1 := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n1}]\ncontainers: [{name: app, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{v1}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	v2 := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n2}]\ndependsOn: [{pod: db}]\ncontainers: [{name: app, image: example.org/web:2}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{v2}, Ready: true})
	fake.Reset()
	for range 3 {
		_ = s.SyncOnce(t.Context())
	}
	spec := specsOf(t, fake, "web")["app"]
	if len(spec.Networks) == 0 || spec.Networks[0].Name != "n1" {
		t.Fatalf("setup: web's old container should still be on n1 (waiting), spec %+v", spec.Networks)
	}
	if !slices.Contains(fake.Networks(), "n1") || callsOf(fake, "RemoveNetwork") > 0 {
		t.Errorf("waiting pod web still runs on n1, yet RemoveNetwork was called %d times in 3 syncs; networks now %v",
			callsOf(fake, "RemoveNetwork"), fake.Networks())
	}
}

// netCheckingFake refuses to start a container whose networks are gone,
// as the engine does ("network n1 not found").
type netCheckingFake struct{ *synctest.Fake }

func (f netCheckingFake) Start(ctx context.Context, id string) error {
	if spec, ok := f.Spec(id); ok {
		for _, n := range spec.Networks {
			if !slices.Contains(f.Networks(), n.Name) {
				return fmt.Errorf("start container %s: network %s not found: %w", id, n.Name, hruntime.ErrNotFound)
			}
		}
	}
	return f.Fake.Start(ctx, id)
}

// TestRestartRecreatesAMissingNetwork (second outside review): a stopped
// container whose hostlet network went (removed by the prune above, by a
// hand "docker network rm" of a network only stopped containers use, ...)
// is only ever restarted: ensureNetworks runs only when the namespace
// holder is created, so the network is never made again and the pod fails
// to start on every sync until its spec changes.
func TestRestartRecreatesAMissingNetwork(t *testing.T) {
	fake := netCheckingFake{synctest.NewFake()}
	s := newFakeSyncer(t, fake)
	web := decodePod(t, "version: v1beta1\nid: web\nnetworks: [{name: n1}]\ncontainers: [{name: app, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{web}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	list, _ := fake.List(t.Context())
	if err := fake.Fake.Stop(t.Context(), list[0].ID, 0); err != nil {
		t.Fatal(err)
	}
	_ = fake.RemoveNetwork(t.Context(), "n1")
	err := s.SyncOnce(t.Context())
	if st := statusOf(s, "web"); st.Phase != hsync.PhaseRunning {
		t.Errorf("web not running again after its network went: %s %s %q (sync error %v)", st.Phase, st.Reason, st.Message, err)
	}
}
