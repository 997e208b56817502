package podspec

import (
	"maps"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// A container's tmpfs mounts reach its engine spec with their options,
// are part of its hash, and a change to one is a reason naming it; a
// container without any keeps its summary as before (no recreate on
// upgrade).
func TestTmpfsInSpecHashAndReasons(t *testing.T) {
	env := RandomEnvHasher()
	base := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1"}}}
	plain := Summarize(base.WithDefaults(), 0, env)
	with := base.Clone()
	with.Containers[0].Tmpfs = []manifest.Tmpfs{{MountPath: "/run", SizeBytes: 16 << 20, Mode: 0o1750, Exec: true}, {MountPath: "/tmp"}}
	spec := App("inst", NewPod(with, "s", "r"), 0, "", env)
	if want := map[string]string{"/run": "size=16777216,mode=1750,exec", "/tmp": "noexec"}; !maps.Equal(spec.Tmpfs, want) {
		t.Errorf("engine tmpfs %v, want %v", spec.Tmpfs, want)
	}
	if len(plain.Mounts) != 0 {
		t.Errorf("a container without tmpfs has mounts %q in its summary", plain.Mounts)
	}
	bigger := with.Clone()
	bigger.Containers[0].Tmpfs[1].SizeBytes = 1 << 20
	if manifest.ContainerHash(with, 0) == manifest.ContainerHash(bigger, 0) || manifest.ContainerHash(base, 0) == manifest.ContainerHash(with, 0) {
		t.Error("a tmpfs change leaves the container's hash as it was")
	}
	reasons := strings.Join(changeReasons(Summarize(with.WithDefaults(), 0, env), Summarize(bigger.WithDefaults(), 0, env)), "; ")
	if !strings.Contains(reasons, "/tmp") {
		t.Errorf("reasons %q, want the tmpfs at /tmp named", reasons)
	}
}
