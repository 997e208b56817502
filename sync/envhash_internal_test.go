package sync

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// legacyManifest is the pod of the previous-release tests; IMG stands for
// the image.
const legacyManifest = `version: v1beta1
id: legacy
restartPolicy: Always
labels: {tier: web}
containers:
  - name: app
    image: IMG
    command: [/demo, serve]
    env:
      - {name: MODE, value: blue-7f3a}
      - {name: TOKEN, value: tok-91c2e}
    ports: [{containerPort: 8080}]
  - name: side
    image: IMG
    command: [/demo, pause]
    env:
      - {name: LEVEL, value: "3"}
`

// legacySpecLabels are the io.hostlet.spec labels the previous release
// (before env hashes were keyed) wrote for legacyManifest's containers, in
// order, as its code printed them: env values as unkeyed "sha256:" hashes.
var legacySpecLabels = []string{
	`{"image":"IMG","command":["/demo","serve"],"env":{"MODE":"sha256:048ec7b34b3f430f","TOKEN":"sha256:b276c39dcb5a0353"},"ports":["8080/TCP"],"restartPolicy":"Always","labels":{"tier":"web"}}`,
	`{"image":"IMG","command":["/demo","pause"],"env":{"LEVEL":"sha256:6c8de1b3108989af"},"restartPolicy":"Always","labels":{"tier":"web"}}`,
}

func legacyPod(t *testing.T, image string) Pod {
	t.Helper()
	ms, err := manifest.Decode([]byte(strings.ReplaceAll(legacyManifest, "IMG", image)), manifest.Origin{Source: "test", File: "legacy.yaml"})
	if err != nil || len(ms) != 1 || len(ms[0].Errors) > 0 {
		t.Fatalf("decode: %v %+v", err, ms)
	}
	return NewPod(ms[0].Manifest, "test", "rev1")
}

func TestComparableEnv(t *testing.T) {
	a := NewEnvHasher([]byte("key-a-0123456789abcdef0123456789"))
	b := NewEnvHasher([]byte("key-b-0123456789abcdef0123456789"))
	tests := []struct {
		name string
		x, y string
		want bool
	}{
		{name: "same key", x: a.Hash("X", "1"), y: a.Hash("X", "2"), want: true},
		{name: "other key", x: a.Hash("X", "1"), y: b.Hash("X", "1")},
		{name: "unkeyed (previous release)", x: "sha256:048ec7b34b3f430f", y: a.Hash("MODE", "blue-7f3a")},
		{name: "hidden", x: (*EnvHasher)(nil).Hash("X", "1"), y: a.Hash("X", "1")},
		{name: "both unkeyed", x: "sha256:048ec7b34b3f430f", y: "sha256:b276c39dcb5a0353"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podspec.Comparable(tc.x, tc.y); got != tc.want {
				t.Errorf("podspec.Comparable(%q, %q) = %v, want %v", tc.x, tc.y, got, tc.want)
			}
		})
	}
}

// TestLegacyLabelsOnlyDifferInEnvForm: the previous release's
// io.hostlet.spec label is this release's with the env values hashed
// differently, and nothing else.
func TestLegacyLabelsOnlyDifferInEnvForm(t *testing.T) {
	p := legacyPod(t, "IMG")
	for i := range p.Manifest.Containers {
		var old, now podspec.Summary
		if err := json.Unmarshal([]byte(legacySpecLabels[i]), &old); err != nil {
			t.Fatal(err)
		}
		now = podspec.Summarize(p.Manifest, i, RandomEnvHasher())
		if len(old.Env) != len(now.Env) {
			t.Fatalf("container %d: env %v, then %v", i, old.Env, now.Env)
		}
		old.Env, now.Env = nil, nil
		if !reflect.DeepEqual(old, now) {
			t.Errorf("container %d: the previous release recorded %+v, this one %+v", i, old, now)
		}
	}
}

// TestPreviousReleaseContainersAdopted: containers made by the previous
// release (labels as it wrote them, unkeyed env hashes in io.hostlet.spec)
// are adopted by this one on the real engine: nothing is created,
// recreated or restarted, and plans made against them (as `hostlet diff`
// makes them) claim no env change merely because the hash form changed.
func TestPreviousReleaseContainersAdopted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	inst := dockertest.Instance(t)
	img := dockertest.TestImage(t)
	rt := dockertest.DockerFor(t, inst)
	p := legacyPod(t, img)

	// What the previous release left running: the infra container, then
	// each app container with the label it wrote.
	create := func(spec hruntime.ContainerSpec) string {
		t.Helper()
		id, err := rt.Create(ctx, spec)
		if err != nil {
			t.Fatalf("create %s: %v", spec.Name, err)
		}
		if err := rt.Start(ctx, id); err != nil {
			t.Fatalf("start %s: %v", spec.Name, err)
		}
		return id
	}
	infraID := create(podspec.Infra(inst, img, []string{"/demo", "pause"}, p))
	for i := range p.Manifest.Containers {
		spec := podspec.App(inst, p, i, infraID, nil)
		spec.Labels[LabelSpec] = strings.ReplaceAll(legacySpecLabels[i], "IMG", img)
		create(spec)
	}
	before, err := rt.List(ctx)
	if err != nil || len(before) != 3 {
		t.Fatalf("list: %d containers, %v; want 3", len(before), err)
	}

	ev := eventlog.NewLog(100)
	s, err := New(rt, Options{Instance: inst, InfraImage: img, InfraCommand: []string{"/demo", "pause"}, Interval: time.Hour, Concurrency: 2, Prune: true, StateDir: t.TempDir()},
		dockertest.Logger(t), ev)
	if err != nil {
		t.Fatal(err)
	}
	s.SetDesired(Desired{Pods: []Pod{p}, Ready: true})
	for range 2 {
		if err := s.SyncOnce(ctx); err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	after, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(cs []hruntime.Container) map[string]string {
		out := map[string]string{}
		for _, c := range cs {
			out[c.Slot()] = c.ID + " " + c.State
		}
		return out
	}
	if !reflect.DeepEqual(ids(before), ids(after)) {
		t.Errorf("containers before adoption %v, after %v: want the same, running", ids(before), ids(after))
	}
	for _, e := range ev.List() {
		t.Errorf("event after adopting the previous release's containers: %+v", e)
	}
	rep := s.Report()
	if len(rep.Pods) != 1 || rep.Pods[0].Phase != PhaseRunning || rep.Pods[0].LastAction != nil {
		t.Errorf("pod status %+v, want Running with no action", rep.Pods)
	}
	if plan := MakePlan([]Pod{p}, after, PlanOptions{Prune: true, EnvHasher: s.EnvHasher()}); plan.Changed() {
		t.Errorf("plan against the previous release's containers changes %+v", plan.Pods)
	}

	// Edits planned against those containers: what changed is named; an
	// env value is never said to have changed because of the hash form.
	edit := func(f func(m *manifest.Manifest)) []string {
		m := p.Manifest.Clone()
		f(&m)
		plan := MakePlan([]Pod{NewPod(m, "test", "rev2")}, after, PlanOptions{Prune: true, EnvHasher: s.EnvHasher()})
		for _, c := range plan.Pods[0].Changes {
			if c.Container == "app" {
				return c.Reasons
			}
		}
		return nil
	}
	tests := []struct {
		name   string
		edit   func(m *manifest.Manifest)
		want   string
		absent []string
	}{
		{name: "image", edit: func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/other:2" },
			want: "image " + img + " -> example.org/other:2", absent: []string{"env"}},
		{name: "one env value", edit: func(m *manifest.Manifest) { m.Containers[0].Env[0].Value = "green-1b2c" },
			want: "cannot be compared", absent: []string{"env MODE changed", "env TOKEN changed"}},
		{name: "env added", edit: func(m *manifest.Manifest) {
			m.Containers[0].Env = append(m.Containers[0].Env, manifest.EnvVar{Name: "NEW", Value: "x"})
		}, want: "env NEW added", absent: []string{"env MODE changed", "env TOKEN changed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(edit(tc.edit), "; ")
			if !strings.Contains(got, tc.want) {
				t.Errorf("reasons %q, want %q", got, tc.want)
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("reasons %q claim %q", got, a)
				}
			}
		})
	}
}
