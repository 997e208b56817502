package podspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/validate"
)

// TestResolveHostPaths: right before a create, the bind mounts of a spec
// get the resolved host paths (the declared one stays in the manifest, so
// in the hash), and a path no longer allowed fails the create.
func TestResolveHostPaths(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(root, "allowed")
	if err := os.MkdirAll(filepath.Join(allowed, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	m := manifest.Manifest{
		ID:      "web",
		Volumes: []manifest.Volume{{Name: "cache"}, {Name: "data", HostPath: filepath.Join(allowed, "link")}},
		Containers: []manifest.Container{{Name: "app", VolumeMounts: []manifest.VolumeMount{
			{Name: "cache", MountPath: "/cache"}, {Name: "data", MountPath: "/data", ReadOnly: true},
		}}},
	}
	spec := func() hruntime.ContainerSpec {
		return hruntime.ContainerSpec{Mounts: []hruntime.Mount{
			{Type: hruntime.MountVolume, Source: "hostlet_web_cache_x", Target: "/cache"},
			{Type: hruntime.MountBind, Source: filepath.Join(allowed, "link"), Target: "/data", ReadOnly: true},
		}}
	}
	opts := validate.Options{HostPathAllow: []string{allowed}}
	hash := manifest.ContainerHash(m, 0)

	s := spec()
	if err := ResolveHostPaths(&s, m, 0, opts); err != nil {
		t.Fatalf("ResolveHostPaths: %v", err)
	}
	if got, want := s.Mounts[1].Source, filepath.Join(allowed, "real"); got != want {
		t.Errorf("bind source %q, want the resolved %q", got, want)
	}
	if s.Mounts[0].Source != "hostlet_web_cache_x" {
		t.Errorf("volume mount changed: %+v", s.Mounts[0])
	}
	if manifest.ContainerHash(m, 0) != hash {
		t.Error("the container hash changed")
	}

	// The link is swapped after validation.
	if err := os.Remove(filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	s = spec()
	err = ResolveHostPaths(&s, m, 0, opts)
	if want := `volume data: hostPath: "` + filepath.Join(allowed, "link") + `" resolves to "/etc", which is not under any of hostPathAllow`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ResolveHostPaths after the swap: %v, want %s...", err, want)
	}
	if err := CheckHostPaths(m, opts); err == nil {
		t.Error("CheckHostPaths after the swap: nil, want an error")
	}
}
