package sync_test

// What a hostlet instance owns, on the real engine: only the containers
// it can prove it made (hruntime.Proven: the labels of a pod's container
// and exactly the name hostlet gives them at create). A container that
// carries a pod's labels without that name (the classic builder's RUN
// step container of a Dockerfile with those LABELs, stood in for here by
// a container made through the API), and one that inherits the managed
// and instance labels from its image (made from an image hostlet built),
// are left alone: not adopted, removed, started or stopped, and their
// events count for no pod.

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// outsider creates and starts a container through the Docker API, named
// name ("" for an engine-chosen name, as the builder's step containers
// get), removed at the end of the test.
func (e *env) outsider(img, name string, labels map[string]string, env []string, cmd []string) string {
	e.t.Helper()
	resp, err := e.cli.ContainerCreate(e.ctx, &container.Config{Image: img, Labels: labels, Env: env, Cmd: cmd}, nil, nil, nil, name)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true})
	})
	if err := e.cli.ContainerStart(e.ctx, resp.ID, container.StartOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return resp.ID
}

// labelledImage commits the demo image with labels as a new image, named
// after what, removed at the end of the test.
func (e *env) labelledImage(what string, labels map[string]string) string {
	e.t.Helper()
	tmp, err := e.cli.ContainerCreate(e.ctx, &container.Config{Image: e.img}, nil, nil, nil, "")
	if err != nil {
		e.t.Fatal(err)
	}
	ref := "hostlet-test-" + what + "-" + e.inst + ":1"
	_, err = e.cli.ContainerCommit(e.ctx, tmp.ID, container.CommitOptions{Reference: ref, Config: &container.Config{Labels: labels}})
	if rmErr := e.cli.ContainerRemove(e.ctx, tmp.ID, container.RemoveOptions{Force: true}); rmErr != nil {
		e.t.Error(rmErr)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
	})
	return ref
}

// untouched checks that container id still runs as it did (same start,
// never restarted).
func (e *env) untouched(what, id string, before container.InspectResponse) {
	e.t.Helper()
	r, err := e.cli.ContainerInspect(e.ctx, id)
	if err != nil {
		e.t.Errorf("%s %s: %v, want left alone", what, id, err)
		return
	}
	if !r.State.Running || r.State.StartedAt != before.State.StartedAt || r.RestartCount != 0 {
		e.t.Errorf("%s %s was touched: running %v, started %s (was %s), restart count %d",
			what, id, r.State.Running, r.State.StartedAt, before.State.StartedAt, r.RestartCount)
	}
}

// noEventsOf fails on any recorded event of pod (or of no pod at all)
// after the first n events.
func (e *env) noEventsOf(pod string, n int) {
	e.t.Helper()
	for i, ev := range e.ev.List() {
		if i >= n && (ev.Pod == pod || ev.Pod == "") {
			e.t.Errorf("event %+v", ev)
		}
	}
}

// TestForgedLabelsCannotTakeOverAPod: issue 30, finding 1. A container
// carrying a running pod's labels (io.hostlet.managed, instance, pod,
// container and hash copied from its container) under an engine-chosen
// name made the victim's container be removed as "a duplicate for this
// slot" and the forger's adopted. The victim's container keeps its ID
// and its start across syncs; the forged one is left as it is.
func TestForgedLabelsCannotTakeOverAPod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what string
		// labels picks the forged labels from the victim's container's;
		// name is the forged container's ("" for engine-chosen).
		labels func(victim map[string]string) map[string]string
		name   func(e *env, victim hruntime.Container) string
	}{
		{
			what:   "a Dockerfile of another instance: every label copied",
			labels: func(v map[string]string) map[string]string { return maps.Clone(v) },
			name:   func(*env, hruntime.Container) string { return "" },
		},
		{
			what: "a Dockerfile of this instance: the pod and container labels, the build adds managed and instance",
			labels: func(v map[string]string) map[string]string {
				keep := []string{hruntime.LabelManaged, hruntime.LabelInstance, hruntime.LabelPod, hruntime.LabelContainer}
				return maps.Collect(func(yield func(string, string) bool) {
					for _, k := range keep {
						if !yield(k, v[k]) {
							return
						}
					}
				})
			},
			name: func(*env, hruntime.Container) string { return "" },
		},
		{
			what:   "the name another instance gives the pod's container",
			labels: func(v map[string]string) map[string]string { return maps.Clone(v) },
			name: func(e *env, v hruntime.Container) string {
				return hruntime.ContainerName(e.inst+"-other", v.Pod(), v.Slot(), v.Hash())
			},
		},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			port := testkit.FreePort(t)
			e.set(e.pod(singlePod, "victim", e.img, "victim", port))
			e.sync()
			victim := e.containers()["victim/app"]
			before := e.inspect(victim.ID)
			seen := len(e.ev.List())

			forged := e.outsider(e.img, tc.name(e, victim), tc.labels(victim.Labels), nil, []string{"pause"})
			forgedBefore := e.inspect(forged)
			for range 3 {
				e.sync()
			}
			if cs := e.containers(); len(cs) != 1 || cs["victim/app"].ID != victim.ID {
				t.Errorf("containers after syncs: %v, want only the victim's %s", ids(cs), victim.ID)
			}
			e.untouched("the victim's container", victim.ID, before)
			e.untouched("the forged container", forged, forgedBefore)
			testkit.WaitHTTP(t, 10*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", port), "", "MESSAGE=victim")
			if p := e.mustStatus("victim"); p.Phase != hsync.PhaseRunning {
				t.Errorf("victim: phase %s %q", p.Phase, p.Reason)
			}
			e.noEventsOf("victim", seen)
			if n := e.rt.Unproven(); n != 1 {
				t.Errorf("Unproven = %d, want the forged container reported", n)
			}
		})
	}
}

// TestContainerOfAnImageHostletBuiltIsNotAPod: issue 30, finding 3. An
// image hostlet built carries io.hostlet.managed and io.hostlet.instance;
// an operator's `docker run -d` of it inherited them without a pod label,
// was listed as pod "" and removed at once (the
// {"type":"remove","pod":"","container":""} event). It is left running,
// and no event names a pod "".
func TestContainerOfAnImageHostletBuiltIsNotAPod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The image: the demo image with the labels a build of this instance
	// gave its images.
	ref := e.labelledImage("built", map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: e.inst})

	e.set(e.pod(pausePod, "keep", e.img))
	e.sync()
	keep := e.containers()["keep/app"]
	seen := len(e.ev.List())

	// docker run -d <image>: no labels of its own.
	op := e.outsider(ref, "", nil, nil, []string{"pause"})
	if l := e.inspect(op).Config.Labels; l[hruntime.LabelManaged] != "true" || l[hruntime.LabelInstance] != e.inst {
		t.Fatalf("the operator's container has labels %v, want the image's", l)
	}
	opBefore := e.inspect(op)
	for range 3 {
		e.sync()
	}
	e.untouched("the operator's container", op, opBefore)
	if cs := e.containers(); len(cs) != 1 || cs["keep/app"].ID != keep.ID {
		t.Errorf("containers after syncs: %v, want only keep's %s", ids(cs), keep.ID)
	}
	e.noEventsOf("", seen)
	for _, ev := range e.ev.List()[seen:] {
		if ev.Type == eventlog.Remove {
			t.Errorf("remove event %+v", ev)
		}
	}
	for _, p := range e.s.Report().Pods {
		if p.ID != "keep" {
			t.Errorf("reported pod %+v", p)
		}
	}
	if n := e.rt.Unproven(); n != 1 {
		t.Errorf("Unproven = %d, want the operator's container reported", n)
	}
}

// TestForgedDieEventCountsForNoPod: a "die" of a container carrying a
// pod's labels without being hostlet's (a builder's RUN step exiting) is
// no crash of that pod: no restart counted, no crash loop, no rollback.
func TestForgedDieEventCountsForNoPod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pVictim, pSentinel := testkit.FreePort(t), testkit.FreePort(t)
	e.set(e.pod(singlePod, "victim", e.img, "victim", pVictim), e.pod(singlePod, "sentinel", e.img, "sentinel", pSentinel))
	e.sync()
	victim := e.containers()["victim/app"]
	before := e.inspect(victim.ID)
	seen := len(e.ev.List())
	e.run()

	// It dies with 3 after a second, as a failing RUN step does.
	forged := e.outsider(e.img, "", maps.Clone(victim.Labels), []string{"EXIT_AFTER=1s", "EXIT_CODE=3"}, nil)
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		r := e.inspect(forged)
		return r.State.Status == "exited", "forged container " + r.State.Status
	})
	// The sentinel crashes after it: once its restart is counted, the
	// forged die event (earlier in the engine's stream) was handled.
	testkit.WaitHTTP(t, 10*time.Second, "POST", fmt.Sprintf("http://127.0.0.1:%d/exit?code=3", pSentinel), "", "exiting with code 3")
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		c, _ := e.containerStatus("sentinel", "app")
		return c.Restarts == 1, fmt.Sprintf("sentinel: %d restarts", c.Restarts)
	})

	if c, _ := e.containerStatus("victim", "app"); c.Restarts != 0 || c.State != hruntime.StateRunning || c.ContainerID != victim.ID {
		t.Errorf("victim's container: %+v, want its own, running, no restart", c)
	}
	if p := e.mustStatus("victim"); p.Phase != hsync.PhaseRunning || p.Reason != "" {
		t.Errorf("victim: phase %s %q", p.Phase, p.Reason)
	}
	e.untouched("the victim's container", victim.ID, before)
	if r := e.inspect(forged); r.State.Running || r.RestartCount != 0 {
		t.Errorf("the forged container was started again: %+v", r.State)
	}
	e.noEventsOf("victim", seen)
	if n := e.rt.UnprovenEvents(); n < 2 {
		t.Errorf("UnprovenEvents = %d, want the forged container's start and die", n)
	}
	for _, ev := range e.ev.List() {
		if strings.Contains(ev.Reason, "exited (3)") && ev.Pod != "sentinel" {
			t.Errorf("crash counted for %+v", ev)
		}
	}
}

// TestImageLabelsDoNotShowThroughOnTheEngine: the engine gives a
// container its image's labels under the ones it is created with. An
// image labelled with the io.hostlet.* labels hostlet reads back
// (networks to take down, files to keep, the recorded spec, source and
// revision) shows none of them on the containers hostlet makes of it.
func TestImageLabelsDoNotShowThroughOnTheEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	forged := map[string]string{
		hsync.LabelNetworks: "victim_default", hsync.LabelFiles: "forged", hsync.LabelSpec: `{"image":"forged"}`,
		hruntime.LabelSource: "forged", hruntime.LabelRevision: "forged", hruntime.LabelPod: "victim", hruntime.LabelContainer: "forged",
	}
	ref := e.labelledImage("forged", forged)
	e.set(e.pod(`
version: v1beta1
id: two
terminationGracePeriodSeconds: 1
containers:
  - {name: a, image: %[1]s, command: [/demo, pause]}
  - {name: b, image: %[1]s, command: [/demo, pause]}
`, ref), e.pod(pausePod, "one", ref))
	e.sync()
	cs := e.containers()
	if len(cs) != 4 {
		t.Fatalf("containers %v, want two/POD, two/a, two/b and one/app", ids(cs))
	}
	for k, c := range cs {
		labels := e.inspect(c.ID).Config.Labels
		for l, v := range forged {
			if got, ok := labels[l]; !ok || got == v {
				t.Errorf("%s: label %s = %q (set %v), the image's showed through", k, l, got, ok)
			}
		}
	}
}
