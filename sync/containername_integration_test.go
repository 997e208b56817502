package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// secondTag tags the demo image as a second image, removed at the end of
// the test.
func (e *env) secondTag(what string) string {
	e.t.Helper()
	ref := "hostlet-test-" + what + "-" + e.inst + ":2"
	if err := e.cli.ImageTag(e.ctx, e.img, ref); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.cli.ImageRemove(ctx, ref, image.RemoveOptions{})
	})
	return ref
}

// TestAChosenNameIsKeptThroughAKillAtEachStepOfARecreate (real engine):
// the container keeps the name its manifest chose through a recreate, and
// a kill -9 after each step of it (create under hostlet's own name, stop
// and remove the old one, rename, start) is finished by the next hostlet.
func TestAChosenNameIsKeptThroughAKillAtEachStepOfARecreate(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	checkRecreateCutShort(t, e.rt, e.inst, e.img, e.img, e.secondTag("named"), name)
	r := e.inspect(name)
	if r.Config.Labels[hruntime.LabelName] != name || r.Config.Labels[hruntime.LabelNameProof] == "" {
		t.Errorf("labels %v: want the chosen name and its proof", r.Config.Labels)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAChosenNameHeldByAnotherContainerIsAConflict (real engine): a name
// held by a container hostlet did not make, even one that carries the
// pod's labels and claims the name, is a conflict naming it: the holder
// is left running, and the pod's container is not made.
func TestAChosenNameHeldByAnotherContainerIsAConflict(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	forged := map[string]string{
		hruntime.LabelManaged: "true", hruntime.LabelInstance: e.inst, hruntime.LabelPod: "web", hruntime.LabelContainer: "app",
		hruntime.LabelName: name, hruntime.LabelNameProof: strings.Repeat("0", 32),
	}
	id := e.outsider(e.img, name, forged, nil, []string{"/demo", "pause"})
	before := e.inspect(id)
	e.set(namedPod(t, e.img, name))
	err := e.s.SyncOnce(e.ctx)
	st := e.mustStatus("web")
	for _, got := range []string{st.Message, errText(err)} {
		if st.Phase == hsync.PhaseRunning || !strings.Contains(got, `container name "`+name+`" is held by container `+id[:12]) ||
			!strings.Contains(got, "a container hostlet did not make") {
			t.Errorf("pod %s %s: %q, want a conflict naming the holder", st.Phase, st.Reason, got)
		}
	}
	if got := slotOf(t, e.rt); len(got) != 0 {
		t.Errorf("containers of the pod: %+v, want none", got)
	}
	e.untouched("the holder", id, before)
}

// twoNamed is pod web of two containers sharing an infra container's
// network: app, named name, and side; hostname is the pod's (a change of
// it replaces the infra container alone).
func twoNamed(t testing.TB, img, name, hostname string) hsync.Pod {
	return decodePod(t, fmt.Sprintf(`
version: v1beta1
id: web
hostname: %s
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %s
    containerName: %s
    command: ["/demo", "pause"]
  - name: side
    image: %s
    command: ["/demo", "pause"]
`, hostname, img, name, img))
}

// TestAReplacedInfraContainerTakesTheNamedContainerWithIt (real engine):
// when the infra container of a pod is replaced, its named container is
// recreated into the new one's network, and a kill -9 after any engine
// change of that leaves what the next hostlet finishes: every container
// running, the named one under its name, both in the new infra
// container's network namespace.
func TestAReplacedInfraContainerTakesTheNamedContainerWithIt(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	hosts := []string{"one", "two"}
	for n := 1; ; n++ {
		before, after := twoNamed(t, e.img, name, hosts[n%2]), twoNamed(t, e.img, name, hosts[(n+1)%2])
		syncOnce(t, e.rt, e.inst, e.img, before)
		k := &killedAfter{FullRuntime: e.rt, left: n}
		syncOnce(t, k, e.inst, e.img, after)
		syncOnce(t, e.rt, e.inst, e.img, after)
		byslot := map[string]hruntime.Container{}
		for _, c := range e.list() {
			byslot[c.Slot()] = c
		}
		infra, app, side := byslot[hruntime.InfraName], byslot["app"], byslot["side"]
		if !infra.Running() || !app.Running() || !side.Running() || app.Name != name {
			t.Fatalf("killed after %v, then one sync: %+v, want the pod running, app named %s", k.changes, byslot, name)
		}
		for _, c := range []hruntime.Container{app, side} {
			if mode := e.inspect(c.ID).HostConfig.NetworkMode; string(mode) != "container:"+infra.ID {
				t.Errorf("killed after %v: %s joins %s, not the infra container %s", k.changes, c.Slot(), mode, infra.ID)
			}
		}
		if len(k.changes) < n {
			break // the recreate ran to its end: every kill point was tried
		}
	}
}

// list lists the instance's containers.
func (e *env) list() []hruntime.Container {
	e.t.Helper()
	list, err := e.rt.List(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// TestGivingARunningContainerANameStopsItGracefully (real engine): a
// container given a name with no other change holds the temporary name
// its successor needs, so it is stopped (SIGTERM, its grace period) and
// removed first, never killed.
func TestGivingARunningContainerANameStopsItGracefully(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	unnamed := decodePod(t, fmt.Sprintf("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: %s, command: [/demo, pause]}\n", e.img))
	named := decodePod(t, fmt.Sprintf("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: %s, command: [/demo, pause], containerName: %s}\n", e.img, name))
	e.set(unnamed)
	e.sync()
	old := slotOf(t, e.rt)[0]
	// Stopped before its process handles SIGTERM, it would die of it.
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		code, err := e.rt.Exec(e.ctx, old.ID, []string{"/demo", "exists", "/tmp/paused"})
		return err == nil && code == 0, fmt.Sprintf("/tmp/paused in the old container: %d %v", code, err)
	})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	msgs, errs := e.cli.Events(ctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("container", old.ID))})
	e.set(named)
	e.sync()
	if now := slotOf(t, e.rt); len(now) != 1 || now[0].Name != name || !now[0].Running() {
		t.Fatalf("after naming it: %+v", now)
	}
	// The old container's die (Podman sends no destroy to a filtered
	// stream).
	var codes []string
	select {
	case m := <-dieOf(msgs):
		codes = append(codes, m.Actor.Attributes["exitCode"])
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("no die event of the old container within 30s")
	}
	if len(codes) != 1 || codes[0] != "0" {
		t.Errorf("the old container died with exit codes %v, want 0 (SIGTERM, handled)", codes)
	}
}

// dieOf passes on the first die event of msgs.
func dieOf(msgs <-chan events.Message) <-chan events.Message {
	out := make(chan events.Message, 1)
	go func() {
		for m := range msgs {
			if m.Action == events.ActionDie {
				out <- m
				return
			}
		}
	}()
	return out
}

// TestAnImagesNameLabelIsNotTheContainers (real engine): an image that
// carries io.hostlet.name (one committed from a named container) gives it
// to no container hostlet makes: a pod without a name is not recreated
// sync after sync.
func TestAnImagesNameLabelIsNotTheContainers(t *testing.T) {
	e := newEnv(t)
	img := e.labelledImage("namelabel", map[string]string{hruntime.LabelName: "someone-else", hruntime.LabelNameProof: strings.Repeat("0", 32)})
	e.set(decodePod(t, fmt.Sprintf("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: %s, imagePullPolicy: Never, command: [/demo, pause]}\n", img)))
	e.sync()
	first := slotOf(t, e.rt)
	e.sync()
	e.sync()
	if now := slotOf(t, e.rt); len(first) != 1 || len(now) != 1 || now[0].ID != first[0].ID {
		t.Errorf("containers %+v, then %+v: recreated", first, now)
	}
}

// TestACommittedNamedContainerIsNotHostlets (real engine): an image
// committed from a named container carries its labels, proof included; a
// container made from it by hand under the same name is not hostlet's
// (the proof is for the image the pod's container was made from): it is
// neither removed with the pod nor adopted by it, and the name is a
// conflict naming it.
func TestACommittedNamedContainerIsNotHostlets(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	e.set(namedPod(t, e.img, name))
	e.sync()
	ref := "hostlet-test-committed-" + e.inst + ":1"
	if _, err := e.cli.ContainerCommit(e.ctx, name, container.CommitOptions{Reference: ref}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
	})
	e.set()
	e.sync()
	if got := slotOf(t, e.rt); len(got) != 0 {
		t.Fatalf("the pod's container is still there: %+v", got)
	}
	id := e.outsider(ref, name, nil, nil, []string{"/demo", "pause"})
	before := e.inspect(id)
	e.sync()
	e.set(namedPod(t, e.img, name))
	err := e.s.SyncOnce(e.ctx)
	if !strings.Contains(errText(err), "a container hostlet did not make") {
		t.Errorf("sync with the pod back: %v, want the name a conflict naming the hand-made container", err)
	}
	e.untouched("the container made from the committed image", id, before)
}
