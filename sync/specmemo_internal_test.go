package sync

import (
	"testing"
	"unsafe"

	"github.com/hostlet/hostlet/manifest"
)

func memoTestManifest(t *testing.T) manifest.Manifest {
	t.Helper()
	ms, err := manifest.Decode([]byte(`
version: v1beta1
id: web
labels: {team: a}
containers:
  - name: app
    image: example.org/app:1
    env: [{name: MODE, value: fast}]
    ports: [{containerPort: 8080, hostPort: 18080}]
  - name: side
    image: example.org/side:1
`), manifest.Origin{Source: "test", File: "web.yaml"})
	if err != nil || len(ms) != 1 || len(ms[0].Errors) > 0 {
		t.Fatalf("decoding the manifest: %v %v", err, ms)
	}
	return NewPod(ms[0].Manifest, "test", "r1").Manifest
}

// The memo's hashes are always those of the manifest asked about: an
// equal manifest, shared or read anew, gets the memo back; any change,
// deep in a container or at the top of a copy that shares the
// containers, gets hashes made anew.
func TestSpecMemoHashesAreThoseOfTheManifestAskedAbout(t *testing.T) {
	base := memoTestManifest(t)
	for _, tc := range []struct {
		name  string
		edit  func(manifest.Manifest) manifest.Manifest
		reuse bool
	}{
		{"the same manifest", func(m manifest.Manifest) manifest.Manifest { return m }, true},
		{"an equal one read anew", func(manifest.Manifest) manifest.Manifest { return memoTestManifest(t) }, true},
		{"a deep copy", func(m manifest.Manifest) manifest.Manifest { return m.Clone() }, true},
		{"another image", func(m manifest.Manifest) manifest.Manifest {
			m = m.Clone()
			m.Containers[1].Image = "example.org/side:2"
			return m
		}, false},
		{"another env value", func(m manifest.Manifest) manifest.Manifest {
			m = m.Clone()
			m.Containers[0].Env[0].Value = "slow"
			return m
		}, false},
		{"another restart policy, containers shared", func(m manifest.Manifest) manifest.Manifest {
			m.RestartPolicy = manifest.RestartNever
			return m
		}, false},
		{"another pod label", func(m manifest.Manifest) manifest.Manifest {
			m = m.Clone()
			m.Labels["team"] = "b"
			return m
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms specMemos
			first := ms.of(base)
			m := tc.edit(base)
			got := ms.of(m)
			if (got == first) != tc.reuse {
				t.Errorf("memo reused: %v, want %v", got == first, tc.reuse)
			}
			for i := range m.Containers {
				if want := manifest.ContainerHash(m, i); got.containerHash(m, i) != want {
					t.Errorf("container %d: hash %s, want %s", i, got.containerHash(m, i), want)
				}
			}
			if want := manifest.InfraHash(m); got.infraHash(m) != want {
				t.Errorf("infra hash %s, want %s", got.infraHash(m), want)
			}
			var none *specMemo
			if none.containerHash(m, 0) != manifest.ContainerHash(m, 0) || none.infraHash(m) != manifest.InfraHash(m) {
				t.Error("without a memo the hashes are not the manifest's")
			}
		})
	}
}

// A pod no longer planned is forgotten: the memos are bounded by the
// desired set.
func TestSpecMemosForgetPodsNoLongerPlanned(t *testing.T) {
	var ms specMemos
	web := memoTestManifest(t)
	api := web.Clone()
	api.ID = "api"
	ms.of(web)
	ms.of(api)
	ms.keepOnly([]Pod{{Manifest: api}})
	if len(ms.byPod) != 1 || ms.byPod["api"] == nil {
		t.Errorf("memos of %v kept, want only api's", keys(ms.byPod))
	}
	ms.keepOnly(nil)
	if len(ms.byPod) != 0 {
		t.Errorf("memos of %v kept, want none", keys(ms.byPod))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A memo reused for an equal manifest read anew holds the new one: the
// manifests of a desired set gone by (file contents included) are not
// kept alive by it.
func TestSpecMemoHoldsNoManifestOfAnEarlierSet(t *testing.T) {
	withFiles := func() manifest.Manifest {
		m := memoTestManifest(t)
		m.Volumes = append(m.Volumes, manifest.Volume{Name: "conf", Files: manifest.NewFiles("conf", false, []manifest.FileItem{{Path: "a", Data: make([]byte, 1<<20)}})})
		return m
	}
	var ms specMemos
	first := ms.of(withFiles())
	fresh := withFiles()
	sm := ms.of(fresh)
	if sm != first {
		t.Fatal("an equal manifest read anew made a new memo")
	}
	if unsafe.SliceData(sm.of.Containers) != unsafe.SliceData(fresh.Containers) || sm.of.Volumes[len(sm.of.Volumes)-1].Files != fresh.Volumes[len(fresh.Volumes)-1].Files {
		t.Error("the memo still holds the earlier set's manifest")
	}
}
