package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// errKilled is what every engine call returns once killedAfter's process
// is gone.
var errKilled = errors.New("hostlet was killed here")

// killedAfter lets the first n engine calls that change something through,
// then fails every call: what a kill -9 right after the n-th change leaves
// on the engine (hostlet keeps no state of an apply between two calls).
type killedAfter struct {
	hsync.FullRuntime
	mu   gosync.Mutex
	left int
	// changes are the changes let through, in order.
	changes []string
}

// change runs one changing call unless the process is gone.
func (k *killedAfter) change(what string, call func() error) error {
	k.mu.Lock()
	if k.left <= 0 {
		k.mu.Unlock()
		return errKilled
	}
	k.left--
	k.changes = append(k.changes, what)
	k.mu.Unlock()
	return call()
}

// read runs one reading call unless the process is gone.
func (k *killedAfter) read() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.left <= 0 {
		return errKilled
	}
	return nil
}

func (k *killedAfter) List(ctx context.Context) ([]hruntime.Container, error) {
	if err := k.read(); err != nil {
		return nil, err
	}
	return k.FullRuntime.List(ctx)
}

func (k *killedAfter) NameHolder(ctx context.Context, name string) (hruntime.Holder, error) {
	if err := k.read(); err != nil {
		return hruntime.Holder{}, err
	}
	return k.FullRuntime.NameHolder(ctx, name)
}

func (k *killedAfter) Create(ctx context.Context, spec hruntime.ContainerSpec) (id string, err error) {
	err = k.change("create "+spec.Name, func() error {
		id, err = k.FullRuntime.Create(ctx, spec)
		return err
	})
	return id, err
}

func (k *killedAfter) Start(ctx context.Context, id string) error {
	return k.change("start", func() error { return k.FullRuntime.Start(ctx, id) })
}

func (k *killedAfter) Stop(ctx context.Context, id string, timeout time.Duration) error {
	return k.change("stop", func() error { return k.FullRuntime.Stop(ctx, id, timeout) })
}

func (k *killedAfter) Remove(ctx context.Context, id string) error {
	return k.change("remove", func() error { return k.FullRuntime.Remove(ctx, id) })
}

func (k *killedAfter) Rename(ctx context.Context, id, name string) error {
	return k.change("rename "+name, func() error { return k.FullRuntime.Rename(ctx, id, name) })
}

// namedPod is a pod whose one container the manifest names name, running
// image tag.
func namedPod(t testing.TB, image, name string) hsync.Pod {
	return decodePod(t, fmt.Sprintf(`
version: v1beta1
id: web
containers:
  - name: app
    image: %s
    containerName: %s
    command: ["/demo", "serve"]
    env: [{name: PORT, value: "8080"}]
`, image, name))
}

// syncOnce runs one sync of pods on rt as a fresh hostlet process would
// (a new Syncer, its own state).
func syncOnce(t *testing.T, rt hsync.FullRuntime, instance, infra string, pods ...hsync.Pod) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(rt, hsync.Options{
		Instance: instance, InfraImage: infra, InfraCommand: []string{"/demo", "pause"},
		Interval: time.Second, Concurrency: 1, Prune: true, StateDir: t.TempDir(),
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil && !errors.Is(err, errKilled) {
		t.Fatalf("SyncOnce: %v", err)
	}
	return s
}

// slotOf returns the containers of pod web's slot app, by list.
func slotOf(t *testing.T, rt hsync.Lister) []hruntime.Container {
	t.Helper()
	list, err := rt.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []hruntime.Container
	for _, c := range list {
		if c.Pod() == "web" && c.Slot() == "app" {
			out = append(out, c)
		}
	}
	return out
}

// recreateSteps are the engine changes of recreating a container under a
// chosen name, in order.
var recreateSteps = []string{"create", "stop", "remove", "rename", "start"}

// checkRecreateCutShort recreates pod web (container name name) from
// image before to image after on rt, killing hostlet right after each
// step of the recreate in turn, and checks that the next hostlet finishes
// it: one container in the slot, under the chosen name, of the new spec,
// running; and that the sync after that changes nothing.
func checkRecreateCutShort(t *testing.T, rt hsync.FullRuntime, instance, infra, before, after, name string) {
	for n := 1; n <= len(recreateSteps); n++ {
		t.Run(fmt.Sprintf("killed after %s", recreateSteps[n-1]), func(t *testing.T) {
			syncOnce(t, rt, instance, infra, namedPod(t, before, name))
			old := slotOf(t, rt)
			if len(old) != 1 || old[0].Name != name || !old[0].Running() {
				t.Fatalf("before: %+v, want one running container named %s", old, name)
			}
			k := &killedAfter{FullRuntime: rt, left: n}
			syncOnce(t, k, instance, infra, namedPod(t, after, name))
			if len(k.changes) != n {
				t.Fatalf("the kill came after %v, want after %d changes", k.changes, n)
			}
			syncOnce(t, rt, instance, infra, namedPod(t, after, name))
			now := slotOf(t, rt)
			if len(now) != 1 || now[0].Name != name || !now[0].Running() || now[0].ID == old[0].ID || now[0].Image != after {
				t.Fatalf("after the kill after %v and one more sync: %+v, want one running container named %s from %s, not %s", k.changes, now, name, after, old[0].ID)
			}
			s := syncOnce(t, rt, instance, infra, namedPod(t, after, name))
			if pods := s.Report().Pods; len(pods) != 1 || pods[0].Phase != hsync.PhaseRunning {
				t.Errorf("the sync after: pods %+v, want web running", pods)
			}
			if again := slotOf(t, rt); len(again) != 1 || again[0].ID != now[0].ID {
				t.Errorf("the sync after recreated it: %+v", again)
			}
			// Back to the first image for the next kill point.
			syncOnce(t, rt, instance, infra, namedPod(t, before, name))
		})
	}
}

// TestAChosenNameIsKeptThroughARecreate: a container whose manifest
// chooses its name is recreated under that name, its successor created
// (under hostlet's own name) before the old one stops, then renamed and
// started; nothing else is ever named so.
func TestAChosenNameIsKeptThroughARecreate(t *testing.T) {
	fake := synctest.NewFake()
	syncOnce(t, fake, "unit", "example.org/pause:1", namedPod(t, "example.org/app:1", "shop-web"))
	first := slotOf(t, fake)
	fake.Reset()
	syncOnce(t, fake, "unit", "example.org/pause:1", namedPod(t, "example.org/app:2", "shop-web"))
	now := slotOf(t, fake)
	if len(now) != 1 || now[0].Name != "shop-web" || now[0].ID == first[0].ID || !now[0].Running() {
		t.Fatalf("after the recreate: %+v, want one running container named shop-web", now)
	}
	var got []string
	for _, c := range fake.Calls() {
		switch c.Method {
		case "NameHolder", "Create", "Stop", "Remove", "Rename", "Start":
			got = append(got, c.Method)
		}
	}
	want := []string{"NameHolder", "Create", "Stop", "Remove", "Rename", "Start"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("engine calls %v, want %v", got, want)
	}
}

// TestARecreateUnderAChosenNameCutShortIsFinished: a kill -9 after any
// step of the recreate leaves what the next hostlet finishes (unit: the
// fake engine; the real engine's is in the integration tests).
func TestARecreateUnderAChosenNameCutShortIsFinished(t *testing.T) {
	checkRecreateCutShort(t, synctest.NewFake(), "unit", "example.org/pause:1", "example.org/app:1", "example.org/app:2", "shop-web")
}

// pairPod is pod id of containers a and b, named na and nb ("" for none).
func pairPod(t testing.TB, id, na, nb string) hsync.Pod {
	y := fmt.Sprintf("version: v1beta1\nid: %s\ncontainers:\n  - {name: a, image: example.org/app:1}\n  - {name: b, image: example.org/app:1}\n", id)
	if na != "" {
		y = strings.Replace(y, "{name: a,", "{name: a, containerName: "+na+",", 1)
	}
	if nb != "" {
		y = strings.Replace(y, "{name: b,", "{name: b, containerName: "+nb+",", 1)
	}
	return decodePod(t, y)
}

// TestNamesSwappedOrPassedOnConverge: names that move between containers
// (swapped within a pod or between two pods, or passed on to a container
// before the one giving it up) end as desired within a few syncs, never
// stuck on a conflict with hostlet's own container.
func TestNamesSwappedOrPassedOnConverge(t *testing.T) {
	for _, tc := range []struct {
		what          string
		before, after []hsync.Pod
	}{
		{"swapped within a pod", []hsync.Pod{pairPod(t, "p", "xx", "yy")}, []hsync.Pod{pairPod(t, "p", "yy", "xx")}},
		{"passed to an earlier container", []hsync.Pod{pairPod(t, "p", "", "xx")}, []hsync.Pod{pairPod(t, "p", "xx", "zz")}},
		{"swapped between pods", []hsync.Pod{pairPod(t, "p", "xx", ""), pairPod(t, "q", "yy", "")}, []hsync.Pod{pairPod(t, "p", "yy", ""), pairPod(t, "q", "xx", "")}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fake := synctest.NewFake()
			syncOnce(t, fake, "unit", "example.org/pause:1", tc.before...)
			want := map[string]string{}
			for _, p := range tc.after {
				for _, c := range p.Manifest.Containers {
					want[p.Manifest.ID+"/"+c.Name] = c.ContainerName
				}
			}
			var got map[string]string
			for range 3 {
				s, err := hsync.New(fake, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second, Concurrency: 4, Prune: true, StateDir: t.TempDir()},
					slog.New(slog.DiscardHandler), eventlog.NewLog(100))
				if err != nil {
					t.Fatal(err)
				}
				s.SetDesired(hsync.Desired{Pods: tc.after, Ready: true})
				_ = s.SyncOnce(t.Context())
				s.Close()
				list, _ := fake.List(t.Context())
				got = map[string]string{}
				for _, c := range list {
					if c.Slot() == hruntime.InfraName {
						continue
					}
					n := c.Name
					if c.Labels[hruntime.LabelName] == "" {
						n = ""
					}
					if !c.Running() {
						n += " (not running)"
					}
					got[c.Pod()+"/"+c.Slot()] = n
				}
				if fmt.Sprint(got) == fmt.Sprint(want) {
					return
				}
			}
			t.Errorf("after 3 syncs: %v, want %v", got, want)
		})
	}
}
