package sync_test

// Table tests of the reasons a pod fails: derived from the classes of the
// error (the runtime's first, then the step that failed), on the in-memory
// engine with one fault injected.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// faultyEngine is a Fake whose calls of one method on one target fail
// with err. The target is "pod/slot" for container calls, "pod/volume" for
// volume calls, and the reference for EnsureImage.
type faultyEngine struct {
	*synctest.Fake
	method, target string
	err            error
}

func (f *faultyEngine) fault(method, target string) error {
	if method == f.method && target == f.target {
		return f.err
	}
	return nil
}

// slotOf names the container id as pod/slot.
func (f *faultyEngine) slotOf(ctx context.Context, id string) string {
	cs, _ := f.Fake.List(ctx)
	for _, c := range cs {
		if c.ID == id || c.Name == id {
			return c.Pod() + "/" + c.Slot()
		}
	}
	return id
}

func (f *faultyEngine) EnsureImage(ctx context.Context, ref, policy string) error {
	if err := f.fault("EnsureImage", ref); err != nil {
		return err
	}
	return f.Fake.EnsureImage(ctx, ref, policy)
}

func (f *faultyEngine) Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	if err := f.fault("Create", spec.Labels[hruntime.LabelPod]+"/"+spec.Labels[hruntime.LabelContainer]); err != nil {
		return "", err
	}
	return f.Fake.Create(ctx, spec)
}

func (f *faultyEngine) Start(ctx context.Context, id string) error {
	if err := f.fault("Start", f.slotOf(ctx, id)); err != nil {
		return err
	}
	return f.Fake.Start(ctx, id)
}

func (f *faultyEngine) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if err := f.fault("Stop", f.slotOf(ctx, id)); err != nil {
		return err
	}
	return f.Fake.Stop(ctx, id, timeout)
}

func (f *faultyEngine) NoRestart(ctx context.Context, id string) error {
	if err := f.fault("NoRestart", f.slotOf(ctx, id)); err != nil {
		return err
	}
	return f.Fake.NoRestart(ctx, id)
}

func (f *faultyEngine) RestoreRestart(ctx context.Context, id, policy string) error {
	if err := f.fault("RestoreRestart", f.slotOf(ctx, id)); err != nil {
		return err
	}
	return f.Fake.RestoreRestart(ctx, id, policy)
}

func (f *faultyEngine) Remove(ctx context.Context, id string) error {
	if err := f.fault("Remove", f.slotOf(ctx, id)); err != nil {
		return err
	}
	return f.Fake.Remove(ctx, id)
}

func (f *faultyEngine) EnsureVolume(ctx context.Context, name string, labels map[string]string) error {
	if err := f.fault("EnsureVolume", labels[hruntime.LabelPod]+"/"+labels[hruntime.LabelVolume]); err != nil {
		return err
	}
	return f.Fake.EnsureVolume(ctx, name, labels)
}

// Engine errors as the runtime classifies them, with the texts the engine
// and its client really give (capitalised as they are).
var (
	//lint:ignore ST1005 the Docker client's own message
	errEngineDown  = fmt.Errorf("Cannot connect to the Docker daemon at unix:///var/run/docker.sock: %w", hruntime.ErrUnavailable)
	errRegistry    = fmt.Errorf("pull image example.org/app:2: %w: manifest unknown", hruntime.ErrImagePull)
	errNeverPulled = fmt.Errorf("image example.org/app:2 not present and imagePullPolicy is Never: %w: %w", hruntime.ErrImageNeverPull, hruntime.ErrNotFound)
	errPullCut     = fmt.Errorf("pull image example.org/app:2: %w: %w", hruntime.ErrImagePull, errEngineDown)
	//lint:ignore ST1005 the engine's own message
	errRefused = errors.New("Error response from daemon: invalid mount config")
)

func TestFailureReasonTable(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	withVolume := edit(onePod("p"), func(m *manifest.Manifest) {
		m.Volumes = []manifest.Volume{{Name: "data"}}
		m.Containers[0].VolumeMounts = []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}
	})
	withHostPath := edit(onePod("p"), func(m *manifest.Manifest) {
		m.Volumes = []manifest.Volume{{Name: "conf", HostPath: "/srv/conf"}}
		m.Containers[0].VolumeMounts = []manifest.VolumeMount{{Name: "conf", MountPath: "/conf"}}
	})
	tests := []struct {
		name           string
		before, after  []hsync.Pod
		stopped        string // a pod/slot stopped before the plan
		broken         string // a pod/slot that never starts again (synctest.Fake.BreakStart)
		method, target string
		err            error
		reason         string
		// message is a part of the pod's message; "…" matches any text.
		message string
		// kept: the running version is left alone (nothing stopped).
		kept bool
	}{
		{name: "pull/the registry refuses the image", before: pods(onePod("p")), after: pods(newImage),
			method: "EnsureImage", target: "example.org/app:2", err: errRegistry,
			reason: hsync.ReasonPull, message: "ErrImagePull: container app: pull image example.org/app:2: image pull failed: manifest unknown", kept: true},
		{name: "pull/absent under imagePullPolicy Never", before: pods(onePod("p")), after: pods(newImage),
			method: "EnsureImage", target: "example.org/app:2", err: errNeverPulled,
			reason: hsync.ReasonPull, message: "imagePullPolicy is Never", kept: true},
		{name: "pull/a pull the engine's outage cut is the pull's failure", before: pods(onePod("p")), after: pods(newImage),
			method: "EnsureImage", target: "example.org/app:2", err: errPullCut,
			reason: hsync.ReasonPull, message: "pull image example.org/app:2", kept: true},
		{name: "pull/cancelled: the step says it", before: pods(onePod("p")), after: pods(newImage),
			method: "EnsureImage", target: "example.org/app:2", err: fmt.Errorf("pull image example.org/app:2: %w", context.Canceled),
			reason: hsync.ReasonPull, message: "context canceled", kept: true},
		{name: "unavailable/engine outage during the image presence check is not ErrImagePull", before: pods(onePod("p")), after: pods(newImage),
			method: "EnsureImage", target: "example.org/app:2", err: fmt.Errorf("inspect image example.org/app:2: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "EngineUnavailable: container app: inspect image example.org/app:2: Cannot connect", kept: true},
		{name: "unavailable/engine outage during the infra image check is not ErrImagePull", after: pods(twoPod("p")),
			method: "EnsureImage", target: tableInfra, err: fmt.Errorf("inspect image %s: %w", tableInfra, errEngineDown),
			reason: hsync.ReasonUnavailable, message: "infra image: inspect image example.org/pause:1"},
		{name: "unavailable/engine outage while stopping a replaced container", before: pods(onePod("p")), after: pods(newImage),
			method: "Stop", target: "p/app", err: fmt.Errorf("stop container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "stop container", kept: true},
		{name: "unavailable/engine outage while creating a container", after: pods(onePod("p")),
			method: "Create", target: "p/app", err: fmt.Errorf("create container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "container app: create container"},
		{name: "unavailable/engine outage while starting a container", after: pods(onePod("p")),
			method: "Start", target: "p/app", err: fmt.Errorf("start container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "container app: start failed: start container"},
		{name: "create/the engine refuses the container", after: pods(onePod("p")),
			method: "Create", target: "p/app", err: errRefused,
			reason: hsync.ReasonCreate, message: "CreateContainerError: container app: Error response from daemon: invalid mount config"},
		{name: "create/the engine refuses the infra container", after: pods(twoPod("p")),
			method: "Create", target: "p/POD", err: errRefused,
			reason: hsync.ReasonCreate, message: "infra container: Error response"},
		{name: "create/the volume cannot be created", after: pods(withVolume),
			method: "EnsureVolume", target: "p/data", err: errRefused,
			reason: hsync.ReasonCreate, message: "volume data: Error response"},
		{name: "start/a created container does not start", after: pods(onePod("p")),
			method: "Start", target: "p/app", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: container app: start failed: Error response"},
		{name: "start/a created infra container does not start", after: pods(twoPod("p")),
			method: "Start", target: "p/POD", err: errRefused,
			reason: hsync.ReasonStart, message: "infra container: start failed"},
		{name: "start/a stopped container does not start again", before: pods(onePod("p")), after: pods(onePod("p")), stopped: "p/app",
			method: "Start", target: "p/app", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: container app: Error response"},
		{name: "unavailable/engine outage while a stopped container gets its restart policy back", before: pods(onePod("p")), after: pods(onePod("p")), stopped: "p/app",
			method: "RestoreRestart", target: "p/app", err: fmt.Errorf("set the restart policy of container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "EngineUnavailable: container app: set the restart policy of container"},
		{name: "start/a stopped infra container does not start again", before: pods(twoPod("p")), after: pods(twoPod("p")), stopped: "p/POD",
			method: "Start", target: "p/POD", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: infra container: Error response"},
		{name: "start/a container to rejoin its pod's network does not stop", before: pods(twoPod("p")), after: pods(twoPod("p")), stopped: "p/POD",
			method: "Stop", target: "p/app", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: container app: Error response"},
		{name: "start/a container that never starts again cannot be removed to be created anew", before: pods(onePod("p")), after: pods(onePod("p")), broken: "p/app",
			method: "Remove", target: "p/app", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: container app: start container …"},
		{name: "create/a container that never starts again is not created anew", before: pods(onePod("p")), after: pods(onePod("p")), broken: "p/app",
			method: "Create", target: "p/app", err: errRefused,
			reason: hsync.ReasonCreate, message: "CreateContainerError: container app (did not start: …; created anew): Error response"},
		{name: "start/an infra container that never starts again cannot be removed to be created anew", before: pods(twoPod("p")), after: pods(twoPod("p")), broken: "p/POD",
			method: "Remove", target: "p/POD", err: errRefused,
			reason: hsync.ReasonStart, message: "StartError: infra container: start container …(and remove it: Error response"},
		{name: "remove/the containers of an infra container that never starts again cannot be removed", before: pods(twoPod("p")), after: pods(twoPod("p")), broken: "p/POD",
			method: "Remove", target: "p/side", err: errRefused,
			reason: hsync.ReasonRemove, message: "RemoveError: container side: Error response"},
		{name: "unavailable/engine outage while creating anew an infra container that never starts again", before: pods(twoPod("p")), after: pods(twoPod("p")), broken: "p/POD",
			method: "Create", target: "p/POD", err: fmt.Errorf("create container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "EngineUnavailable: infra container (did not start: …; created anew): create container"},
		{name: "remove/a replaced container cannot be stopped", before: pods(onePod("p")), after: pods(newImage),
			method: "Stop", target: "p/app", err: errRefused,
			reason: hsync.ReasonRemove, message: "RemoveError: container app: Error response"},
		{name: "remove/a pod no longer desired cannot be removed", before: pods(twoPod("p")),
			method: "Remove", target: "p/side", err: errRefused,
			reason: hsync.ReasonRemove, message: "RemoveError: Error response"},
		{name: "remove/engine outage while removing a pod", before: pods(twoPod("p")),
			method: "Remove", target: "p/side", err: fmt.Errorf("remove container: %w", errEngineDown),
			reason: hsync.ReasonUnavailable, message: "EngineUnavailable: remove container"},
		{name: "host path/not allowed on this host", before: pods(onePod("p")), after: pods(withHostPath),
			reason: hsync.ReasonHostPath, message: "HostPathNotAllowed: volume conf: hostPath", kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := converge(t, nil, tt.before)
			if tt.stopped != "" {
				cs := listed(t, fake)
				if err := fake.Stop(t.Context(), cs[slotIndex(t, cs, tt.stopped)].ID, 0); err != nil {
					t.Fatal(err)
				}
			}
			if tt.broken != "" {
				cs := listed(t, fake)
				if err := fake.BreakStart(cs[slotIndex(t, cs, tt.broken)].ID); err != nil {
					t.Fatal(err)
				}
			}
			before := listed(t, fake)
			rt := &faultyEngine{Fake: fake, method: tt.method, target: tt.target, err: tt.err}
			plan := hsync.MakePlan(tt.after, before, hsync.PlanOptions{Prune: true})
			results := hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler))
			if len(results) != 1 {
				t.Fatalf("%d results, want one", len(results))
			}
			var pe *hsync.PodError
			if !errors.As(results[0].Err, &pe) {
				t.Fatalf("error %v, want a PodError", results[0].Err)
			}
			if pe.Reason != tt.reason || !matches("…"+tt.message+"…", pe.Error()) {
				t.Errorf("reason %q, error %q; want %q, with %q", pe.Reason, pe.Error(), tt.reason, tt.message)
			}
			if tt.err != nil && !errors.Is(pe, tt.err) {
				t.Errorf("errors.Is(%v, the engine's error) is false", pe)
			}
			if tt.kept {
				for _, c := range listed(t, fake) {
					if c.State != hruntime.StateRunning {
						t.Errorf("%s/%s %s: want the running version left alone", c.Pod(), c.Slot(), c.State)
					}
				}
				if after := listed(t, fake); len(after) != len(before) {
					t.Errorf("%d containers after the failure, want the %d before", len(after), len(before))
				}
			}
		})
	}
}

// Issue 13, item 6: an engine outage during the infra image check is not
// ErrImagePull. Through a Syncer: the pod is Failed with EngineUnavailable
// and its event is a failure, not a failed pull.
func TestEngineOutageAtInfraImageCheck(t *testing.T) {
	rt := &faultyEngine{Fake: synctest.NewFake(), method: "EnsureImage", target: tableInfra,
		err: fmt.Errorf("inspect image %s: %w", tableInfra, errEngineDown)}
	ev := eventlog.NewLog(100)
	s, err := hsync.New(rt, hsync.Options{
		Instance: tableInstance, InfraImage: tableInfra, Interval: time.Hour, Concurrency: 2, StateDir: t.TempDir(),
	}, slog.New(slog.DiscardHandler), ev)
	if err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Pods: pods(twoPod("p")), Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil {
		t.Fatal("sync succeeded with the engine down at the infra image check")
	}
	var st hsync.PodStatus
	for _, p := range s.Report().Pods {
		if p.ID == "p" {
			st = p
		}
	}
	if st.Phase != hsync.PhaseFailed || st.Reason != hsync.ReasonUnavailable || !strings.Contains(st.Message, "infra image") {
		t.Errorf("pod: phase %s reason %q message %q; want Failed, %s, naming the infra image", st.Phase, st.Reason, st.Message, hsync.ReasonUnavailable)
	}
	var failed int
	for _, e := range ev.List() {
		switch e.Type {
		case eventlog.PullFailed:
			t.Errorf("event %+v: an engine outage is no failed pull", e)
		case eventlog.Failed:
			failed++
			if e.Reason != hsync.ReasonUnavailable {
				t.Errorf("failed event reason %q, want %s", e.Reason, hsync.ReasonUnavailable)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed events, want 1: %+v", failed, ev.List())
	}
	if got := s.Failures(); len(got) != 1 || got[hsync.ReasonUnavailable] != 1 {
		t.Errorf("failures by reason %v, want %s: 1 (hostlet_pod_failures_total)", got, hsync.ReasonUnavailable)
	}
}
