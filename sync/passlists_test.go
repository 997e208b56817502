package sync_test

import (
	"context"
	"log/slog"
	"slices"
	gosync "sync"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// volumeListCounter counts the engine's volume lists.
type volumeListCounter struct {
	*synctest.Fake
	mu    gosync.Mutex
	lists int
}

func (c *volumeListCounter) ListVolumes(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Fake.ListVolumes(ctx)
}

// A pass that removes pods and drops volumes of others lists the volumes
// once, not once a pod, and still removes exactly the volumes no pod
// keeps.
func TestVolumesListedOncePerPass(t *testing.T) {
	withVolumes := func(id string, names ...string) manifest.Manifest {
		return edit(onePod(id), func(m *manifest.Manifest) {
			for _, n := range names {
				m.Volumes = append(m.Volumes, manifest.Volume{Name: n})
				m.Containers[0].VolumeMounts = append(m.Containers[0].VolumeMounts, manifest.VolumeMount{Name: n, MountPath: "/" + n})
			}
		})
	}
	before := pods(withVolumes("a", "data"), withVolumes("b", "data"), withVolumes("c", "data", "cache"), withVolumes("d", "data", "cache"))
	after := pods(withVolumes("c", "data"), withVolumes("d", "data"))
	fake := converge(t, nil, before)
	rt := &volumeListCounter{Fake: fake}
	opts := tableApplyOptions(nil)
	opts.Concurrency = 4
	plan := hsync.MakePlan(after, listed(t, fake), hsync.PlanOptions{Prune: true})
	for _, r := range hsync.Apply(t.Context(), rt, plan, opts, slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("pod %s: %v", r.ID, r.Err)
		}
	}
	if rt.lists != 1 {
		t.Errorf("%d volume lists in one pass, want 1", rt.lists)
	}
	left, err := fake.ListVolumes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, n := range left {
		kept = append(kept, n[:len("hostlet_c_data")])
	}
	slices.Sort(kept)
	if want := []string{"hostlet_c_data", "hostlet_d_data"}; !slices.Equal(kept, want) {
		t.Errorf("volumes left %q, want those of %q", left, want)
	}
}
