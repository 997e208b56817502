package sync_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/synctest"
)

// joiner is a pod of one container on pod of's network.
func joiner(id, of string) manifest.Manifest {
	return edit(onePod(id), func(m *manifest.Manifest) { m.NetworkOf = of })
}

// A pod with networkOf joins the network namespace of the container
// holding the other pod's (its one container, or its infra container);
// when that container is replaced it is recreated into the new one, and
// while it is stopped or restarting, recovering the joiner waits for it.
func TestNetworkOfFollowsTheHoldingContainer(t *testing.T) {
	fake := synctest.NewFake()
	apply := func(desired []hsync.Pod, recover ...string) []string {
		t.Helper()
		marks := map[string]bool{}
		for _, p := range recover {
			marks[p] = true
		}
		plan := hsync.MakePlan(desired, listed(t, fake), hsync.PlanOptions{Recover: marks})
		for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
			if r.Err != nil {
				t.Fatalf("apply pod %s: %v", r.ID, r.Err)
			}
		}
		return renderPlan(plan)
	}
	joinedAs := func() (joined, holder string) {
		t.Helper()
		cs := listed(t, fake)
		return cs[slotIndex(t, cs, "t/app")].Labels[podspec.LabelNetworkOf], cs[slotIndex(t, cs, "vpn/app")].ID
	}

	apply(pods(onePod("vpn")))
	if got := apply(pods(onePod("vpn"), joiner("t", "vpn"))); !slices.Equal(got, []string{"t/app create: new pod", "vpn/app keep"}) {
		t.Fatalf("joiner added: plan %q", got)
	}
	if joined, holder := joinedAs(); joined != holder || holder == "" {
		t.Fatalf("joined %q, want vpn's container %q", joined, holder)
	}

	v2 := edit(onePod("vpn"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	apply(pods(v2, joiner("t", "vpn")))
	if got := apply(pods(v2, joiner("t", "vpn"))); !slices.Equal(got, []string{"t/app recreate: network of pod vpn: the container holding it was replaced", "vpn/app keep"}) {
		t.Fatalf("after vpn's recreate: plan %q", got)
	}
	if joined, holder := joinedAs(); joined != holder {
		t.Fatalf("joined %q, want vpn's new container %q", joined, holder)
	}

	cs := listed(t, fake)
	cs[slotIndex(t, cs, "vpn/app")].State = hruntime.StateRestarting
	plan := hsync.MakePlan(pods(v2, joiner("t", "vpn")), cs, hsync.PlanOptions{Recover: map[string]bool{"t": true}})
	if got := renderPlan(plan); !slices.Equal(got, []string{"t/app keep", "vpn/app keep"}) {
		t.Errorf("vpn restarting, t to recover: plan %q, want t to wait", got)
	}
	if got := apply(pods(v2, joiner("t", "vpn")), "t"); !slices.Equal(got, []string{"t/app restart: network of pod vpn: rejoin its network namespace", "vpn/app keep"}) {
		t.Errorf("vpn running again, t to recover: plan %q, want t to rejoin", got)
	}
}

// The other pod's infra container holds a pod of two containers' network.
func TestNetworkOfAPodWithAnInfraContainer(t *testing.T) {
	fake := converge(t, nil, pods(twoPod("vpn")))
	plan := hsync.MakePlan(pods(twoPod("vpn"), joiner("t", "vpn")), listed(t, fake), hsync.PlanOptions{})
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("apply pod %s: %v", r.ID, r.Err)
		}
	}
	cs := listed(t, fake)
	if joined, infra := cs[slotIndex(t, cs, "t/app")].Labels[podspec.LabelNetworkOf], cs[slotIndex(t, cs, "vpn/"+hruntime.InfraName)].ID; joined != infra {
		t.Errorf("joined %q, want vpn's infra container %q", joined, infra)
	}
}

// A joiner whose pod has no container to join is never created on the
// default bridge instead.
func TestNetworkOfWithoutTheOtherPodFails(t *testing.T) {
	fake := synctest.NewFake()
	plan := hsync.MakePlan(pods(joiner("t", "vpn")), nil, hsync.PlanOptions{})
	res := hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler))
	if len(res) != 1 || res[0].Err == nil {
		t.Fatalf("results %+v, want t's create to fail", res)
	}
	if cs := listed(t, fake); len(cs) != 0 {
		t.Errorf("containers %+v, want none", cs)
	}
}

// Moving a pod into the network it joins again disrupts nothing that
// still works: a closed maintenance window does not hold it back, while
// a change of the pod itself still waits for the window.
func TestNetworkOfRepairIgnoresTheWindow(t *testing.T) {
	open := true
	e := newRolloutEnv(t, func(time.Time) (bool, time.Time, time.Time) { return open, time.Time{}, time.Time{} })
	joining := func(image string) hsync.Pod {
		p := e.pod("t", "r1", image, "Auto", "")
		p.Manifest.NetworkOf = "vpn"
		return p
	}
	vpn := e.pod("vpn", "r1", "example.org/vpn:1", "Auto", "")
	e.set(vpn, joining("example.org/t:1"))
	e.sync(0)
	e.sync(time.Second) // t waited for vpn to start
	if c := e.app("t"); c.Labels[podspec.LabelNetworkOf] != e.app("vpn").ID {
		t.Fatalf("t joined %q, want vpn's container %s", c.Labels[podspec.LabelNetworkOf], e.app("vpn").ID)
	}

	open = false
	// vpn's container lost: vpn is created anew (nothing of it ran), and
	// t follows it into the new namespace, window or not.
	if err := e.fake.Remove(e.ctx, e.app("vpn").ID); err != nil {
		t.Fatal(err)
	}
	e.sync(time.Second)
	e.sync(time.Second)
	if c := e.app("t"); c.Labels[podspec.LabelNetworkOf] != e.app("vpn").ID || c.State != hruntime.StateRunning {
		t.Errorf("t joined %q (%s) in a closed window, want vpn's new container %s", c.Labels[podspec.LabelNetworkOf], c.State, e.app("vpn").ID)
	}
	e.set(vpn, joining("example.org/t:2"))
	e.sync(time.Second)
	if c := e.app("t"); c.Image != "example.org/t:1" {
		t.Errorf("t runs %s in a closed window, want its change to wait", c.Image)
	}
}

// When the holder of the network a pod joins is replaced, the joiner's
// container goes first (Podman refuses to remove a container another
// joined), the plan and status say so in the same pass, and the joiner
// is created into the new namespace once the holder's pod has changed. A
// held joiner is left as it is, and so is the holder's old container it
// joined (stopped).
func TestNetworkOfJoinerGoesBeforeItsHolder(t *testing.T) {
	for _, held := range []bool{false, true} {
		e := newRolloutEnv(t, nil)
		e.fake.RefuseRemovingJoined()
		joining := e.pod("t", "r1", "example.org/t:1", "Auto", "")
		joining.Manifest.NetworkOf = "vpn"
		e.set(e.pod("vpn", "r1", "example.org/vpn:1", "Auto", ""), joining)
		e.sync(0)
		e.sync(time.Second)
		if e.app("t").ID == "" {
			t.Fatal("t not created")
		}
		if held {
			if _, err := e.s.Hold(e.ctx, "t", "test", ""); err != nil {
				t.Fatal(err)
			}
		}
		e.set(e.pod("vpn", "r2", "example.org/vpn:2", "Auto", ""), joining)
		e.sync(time.Second)
		if held {
			// vpn's new container runs; its old one, which the held t
			// joined, is stopped and left (the engine refuses to remove
			// it), and the next pass says why.
			cs, _ := e.fake.List(e.ctx)
			var images []string
			for _, c := range cs {
				if c.Pod() == "vpn" {
					images = append(images, c.Image+" "+c.State)
				}
			}
			slices.Sort(images)
			if want := []string{"example.org/vpn:1 exited", "example.org/vpn:2 running"}; !slices.Equal(images, want) {
				t.Errorf("held joiner: vpn's containers %q, want %q", images, want)
			}
			e.sync(time.Second)
			if st := e.status("vpn"); !strings.Contains(st.Message, "dependent containers") {
				t.Errorf("held joiner: vpn %s %q, want the engine's refusal", st.Phase, st.Message)
			}
			continue
		}
		if c := e.app("vpn"); c.Image != "example.org/vpn:2" {
			t.Fatalf("vpn runs %s, want vpn:2", c.Image)
		}
		if c := e.app("t"); c.ID != "" {
			t.Fatalf("t's container %s stayed in the namespace that went", c.ID)
		}
		e.sync(time.Second)
		if c := e.app("t"); c.Labels[podspec.LabelNetworkOf] != e.app("vpn").ID || c.State != hruntime.StateRunning {
			t.Errorf("t joined %q (%s), want vpn's new container %s", c.Labels[podspec.LabelNetworkOf], c.State, e.app("vpn").ID)
		}
	}
}

// The plan shows the joiner's recreate in the pass that replaces its
// holder, as diff shows it.
func TestNetworkOfPlanShowsTheJoinerWithItsHolder(t *testing.T) {
	fake := converge(t, nil, pods(onePod("vpn")))
	plan := hsync.MakePlan(pods(onePod("vpn"), joiner("t", "vpn")), listed(t, fake), hsync.PlanOptions{})
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	v2 := edit(onePod("vpn"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	got := renderPlan(hsync.MakePlan(pods(v2, joiner("t", "vpn")), listed(t, fake), hsync.PlanOptions{}))
	if !slices.Equal(got, []string{"t/app recreate: network of pod vpn: the container holding it is replaced", "vpn/app recreate: image example.org/app:1 -> 2"}) {
		t.Errorf("plan %q", got)
	}
}

// A container added to a running pod of one is a change, not a repair:
// the running container's move into the new infra container's network
// waits for a maintenance window.
func TestGrowingAPodWaitsForTheWindow(t *testing.T) {
	open := true
	e := newRolloutEnv(t, func(time.Time) (bool, time.Time, time.Time) { return open, time.Time{}, time.Time{} })
	web := e.pod("web", "r1", "example.org/web:1", "Auto", "")
	e.set(web)
	e.sync(0)
	id := e.app("web").ID
	open = false
	grown := e.pod("web", "r2", "example.org/web:1", "Auto", "")
	grown.Manifest.Containers = append(grown.Manifest.Containers, manifest.Container{Name: "side", Image: "example.org/side:1"})
	e.set(grown)
	e.sync(time.Second)
	if c := e.app("web"); c.ID != id {
		t.Errorf("web's container replaced in a closed window (%s -> %s)", id, c.ID)
	}
}

// A label of the name hostlet gives joiners, on a container of a pod
// that joins no other's network (an image's label), never gets that
// container removed with the container it names.
func TestJoinerLabelOfAnotherPodIsNotTaken(t *testing.T) {
	fake := converge(t, nil, pods(onePod("vpn")))
	vpnID := listed(t, fake)[0].ID
	spy := edit(onePod("a"), func(m *manifest.Manifest) {})
	plan := hsync.MakePlan(pods(onePod("vpn"), spy), listed(t, fake), hsync.PlanOptions{})
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	cs := listed(t, fake)
	a := slotIndex(t, cs, "a/app")
	cs[a].Labels[podspec.LabelNetworkOf] = vpnID // as an image's label would
	aID := cs[a].ID
	v2 := edit(onePod("vpn"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	plan = hsync.MakePlan(pods(v2, spy), cs, hsync.PlanOptions{})
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	after := listed(t, fake)
	if got := after[slotIndex(t, after, "a/app")].ID; got != aID {
		t.Errorf("pod a's container %s removed with vpn's, now %s", aID, got)
	}
}

// diff --against ref:REV plans against what Simulate makes: a joiner
// simulated with its holder is unchanged, and follows a changed holder.
func TestNetworkOfSimulated(t *testing.T) {
	v1 := pods(onePod("vpn"), joiner("t", "vpn"))
	simulated := hsync.Simulate(tableInstance, v1, nil)
	if got := renderPlan(hsync.MakePlan(v1, simulated, hsync.PlanOptions{})); !slices.Equal(got, []string{"t/app keep", "vpn/app keep"}) {
		t.Errorf("against itself: plan %q", got)
	}
	v2 := pods(edit(onePod("vpn"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" }), joiner("t", "vpn"))
	if got := renderPlan(hsync.MakePlan(v2, simulated, hsync.PlanOptions{})); !slices.Equal(got, []string{"t/app recreate: network of pod vpn: the container holding it is replaced", "vpn/app recreate: image example.org/app:1 -> 2"}) {
		t.Errorf("holder changed: plan %q", got)
	}
}
